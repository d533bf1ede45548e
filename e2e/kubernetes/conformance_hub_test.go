package kubernetes

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// followHubRoutes keeps the hub routing every node's pod ranges (its
// podCIDRs and, in pool mode, the IPBlocks it claimed) via the node's
// address, as ipamd's routes component does on every node. The hub stands
// for a control-plane node, which on a real cluster runs ipamd too: the
// API server proxies to pods (the Proxy conformance tests) and reaches
// webhooks in pods from there. It follows the API server every two
// seconds until the test ends; a pass that fails is logged and retried.
func (c *cluster) followHubRoutes(t *testing.T, pool bool) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	if err := c.syncHubRoutes(ctx, pool); err != nil {
		close(done)
		t.Fatal(err)
	}
	go func() {
		defer close(done)
		tick := time.NewTicker(2 * time.Second)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			if err := c.syncHubRoutes(ctx, pool); err != nil && ctx.Err() == nil {
				t.Logf("hub routes: %v", err)
			}
		}
	}()
	c.logf(t, "the hub routes to every node's pods")
}

// syncHubRoutes makes the hub's routes of ipamd's protocol exactly the
// nodes' pod ranges.
func (c *cluster) syncHubRoutes(ctx context.Context, pool bool) error {
	want, err := c.podRangeRoutes(ctx, pool)
	if err != nil {
		return err
	}
	have, err := protocolRoutes(ctx, c.hub)
	if err != nil {
		return err
	}
	for _, r := range want {
		if slices.Contains(have, r) {
			continue
		}
		dst, via, _ := strings.Cut(r, " via ")
		if _, err := runCtx(ctx, "nsenter", "--net="+c.hub, "--", "ip", "route", "replace", dst, "via", via, "proto", routeProtocol); err != nil {
			return err
		}
	}
	for _, r := range have {
		if slices.Contains(want, r) {
			continue
		}
		dst, _, _ := strings.Cut(r, " via ")
		if _, err := runCtx(ctx, "nsenter", "--net="+c.hub, "--", "ip", "route", "del", dst, "proto", routeProtocol); err != nil {
			return err
		}
	}
	return nil
}

// podRangeRoutes are "dst via gateway" lines for every node's podCIDRs
// and, in pool mode, every IPBlock, via the node's address of the family.
func (c *cluster) podRangeRoutes(ctx context.Context, pool bool) ([]string, error) {
	var want []string
	byName := map[string]*clusterNode{}
	for _, n := range c.nodes {
		byName[n.name] = n
		info, err := c.getNode(ctx, n.name)
		if err != nil {
			return nil, err
		}
		for _, p := range info.CIDRs {
			want = append(want, routeVia(p.String(), p.Addr().Is4(), n))
		}
	}
	if !pool {
		return want, nil
	}
	bs, err := c.ipBlocks(ctx)
	if err != nil {
		return nil, err
	}
	for _, b := range bs {
		n, ok := byName[b.Spec.NodeName]
		if !ok {
			continue
		}
		p, err := b.Spec.Prefix()
		if err != nil {
			return nil, fmt.Errorf("IPBlock %s: %w", b.Name, err)
		}
		want = append(want, routeVia(p.String(), p.Addr().Is4(), n))
	}
	return want, nil
}

func routeVia(dst string, v4 bool, n *clusterNode) string {
	if v4 {
		return dst + " via " + n.v4.String()
	}
	return dst + " via " + n.v6.String()
}
