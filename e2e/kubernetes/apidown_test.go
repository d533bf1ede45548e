package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/sandboxipam/sandboxipam/conformance/fixture"
	"github.com/sandboxipam/sandboxipam/internal/testsupport"
)

// apiServerDown stops kube-apiserver, then starts and stops pods on node 1
// while it is down, and starts it again: every ADD gets one address per
// family inside the blocks node 1's ipamd had claimed, none held twice,
// and every DEL frees its pod's, with no request to the API server
// (there is none to answer). The pods are static pods: the kubelet runs
// them from its manifest directory without an API server, through the
// same CRI calls, CNI ADD and DEL as any pod (a sandbox made with crictl
// would be no pod of the kubelet's). The stop lasts as long as these
// operations, not a set time. With the API server back, the cluster check
// finds nothing and the cluster agrees as before.
func (c *cluster) apiServerDown(t *testing.T, check rangeCheck) {
	t.Helper()
	ctx := context.Background()
	n := c.nodes[0]
	blocks, taken := c.nodeHoldings(t, n)
	if err := c.cp.StopAPIServer(); err != nil {
		t.Fatal(err)
	}
	// If the test stops before it does, so that cleanup has an API server.
	t.Cleanup(func() { _ = c.cp.RestartAPIServer(context.Background()) })
	c.logf(t, "kube-apiserver stopped; %s's blocks %v", n.name, blocks)
	first := c.runStaticPods(t, n, blocks, taken, "offline-a", "offline-b", "offline-c")
	c.stopStaticPods(t, n, first, taken, "offline-a", "offline-b")
	second := c.runStaticPods(t, n, blocks, taken, "offline-d", "offline-e")
	c.stopStaticPods(t, n, first, taken, "offline-c")
	c.stopStaticPods(t, n, second, taken, "offline-d", "offline-e")
	c.logf(t, "with the API server down, 5 pods started and stopped on %s: every ADD inside its blocks, none twice, every DEL freed", n.name)
	if err := c.cp.RestartAPIServer(ctx); err != nil {
		t.Fatal(err)
	}
	c.logf(t, "kube-apiserver started again")
	testsupport.WaitFor(t, 2*time.Minute, "the cluster check finds nothing", func(ctx context.Context) error {
		if res := c.clusterCheck(t); len(res.Findings) != 0 {
			return fmt.Errorf("findings %+v", res.Findings)
		}
		return nil
	})
	c.waitAgree(t, poolReplicas, check)
	c.checkBlocksHeld(t)
	c.logf(t, "API server back: the cluster check finds nothing, the cluster agrees")
}

// nodeHoldings are node n's claimed blocks, as its ipamd and the API
// server agree, and the addresses its ipamd holds (address -> sandbox).
func (c *cluster) nodeHoldings(t *testing.T, n *clusterNode) ([]netip.Prefix, map[string]string) {
	t.Helper()
	c.checkBlocksHeld(t)
	ctx := context.Background()
	pool, err := n.pool(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var blocks []netip.Prefix
	for _, r := range pool.Ranges {
		if !r.Retiring {
			blocks = append(blocks, netip.MustParsePrefix(r.Prefix))
		}
	}
	held, err := n.ipamdPods(ctx)
	if err != nil {
		t.Fatal(err)
	}
	taken := map[string]string{}
	for _, h := range held {
		for _, ip := range h.addrs() {
			taken[ip] = h.SandboxID
		}
	}
	return blocks, taken
}

// runStaticPods writes a static pod manifest for each name on node n and
// waits until each runs, with one address per family inside blocks, held
// by ipamd under the pod's sandbox ID, and none held by another (taken:
// address -> sandbox); it adds them to taken and returns the sandboxes by
// name.
func (c *cluster) runStaticPods(t *testing.T, n *clusterNode, blocks []netip.Prefix, taken map[string]string, names ...string) map[string]criPod {
	t.Helper()
	for _, name := range names {
		writeManifest(t, n.staticPods(), appPod(name, fixture.DefaultPauseImage))
	}
	got := map[string]criPod{}
	testsupport.WaitFor(t, 2*time.Minute, fmt.Sprintf("%s runs %v without the API server", n.name, names), func(ctx context.Context) error {
		sandboxes, err := n.cri.pods(ctx)
		if err != nil {
			return err
		}
		clear(got)
		for _, s := range sandboxes {
			for _, name := range names {
				if s.Namespace == "default" && s.Name == name+"-"+n.name && s.State == "SANDBOX_READY" {
					got[name] = s
				}
			}
		}
		if len(got) != len(names) {
			return fmt.Errorf("%d of %d ready", len(got), len(names))
		}
		return ipamdHoldsExactly(ctx, n, got)
	})
	for _, name := range names {
		s := got[name]
		for _, ip := range s.IPs {
			a := netip.MustParseAddr(ip)
			if other, dup := taken[ip]; dup {
				t.Fatalf("%s got %s, which %s holds", name, ip, other)
			}
			if !slices.ContainsFunc(blocks, func(p netip.Prefix) bool { return p.Contains(a) }) {
				t.Fatalf("%s got %s, outside %s's blocks %v", name, ip, n.name, blocks)
			}
			taken[ip] = s.ID
		}
		if len(s.IPs) != 2 {
			t.Fatalf("%s has addresses %v, want one per family", name, s.IPs)
		}
		c.logf(t, "%s: sandbox %s, %v", name, s.ID[:12], sorted(s.IPs))
	}
	return got
}

// ipamdHoldsExactly checks that node n's ipamd holds each sandbox under
// its ID with exactly the runtime's addresses.
func ipamdHoldsExactly(ctx context.Context, n *clusterNode, sandboxes map[string]criPod) error {
	held, err := n.ipamdPods(ctx)
	if err != nil {
		return err
	}
	for name, s := range sandboxes {
		i := slices.IndexFunc(held, func(h ipamPod) bool { return h.SandboxID == s.ID })
		if i < 0 {
			return fmt.Errorf("ipamd holds nothing for %s (sandbox %s)", name, s.ID)
		}
		if !sameSet(held[i].addrs(), s.IPs) {
			return fmt.Errorf("%s: ipamd holds %v, the runtime says %v", name, held[i].addrs(), s.IPs)
		}
	}
	return nil
}

// stopStaticPods removes the manifests of names on node n and waits until
// their sandboxes are no longer ready and ipamd holds nothing for them
// (their DEL came); their addresses leave taken.
func (c *cluster) stopStaticPods(t *testing.T, n *clusterNode, running map[string]criPod, taken map[string]string, names ...string) {
	t.Helper()
	for _, name := range names {
		if err := os.Remove(filepath.Join(n.staticPods(), name+".json")); err != nil {
			t.Fatal(err)
		}
	}
	testsupport.WaitFor(t, 2*time.Minute, fmt.Sprintf("%s stops %v without the API server", n.name, names), func(ctx context.Context) error {
		sandboxes, err := n.cri.pods(ctx)
		if err != nil {
			return err
		}
		for _, s := range sandboxes {
			for _, name := range names {
				if s.ID == running[name].ID && s.State == "SANDBOX_READY" {
					return fmt.Errorf("%s still ready", name)
				}
			}
		}
		held, err := n.ipamdPods(ctx)
		if err != nil {
			return err
		}
		for _, name := range names {
			if slices.ContainsFunc(held, func(h ipamPod) bool { return h.SandboxID == running[name].ID }) {
				return errors.New("ipamd still holds " + name)
			}
		}
		return nil
	})
	for _, name := range names {
		for _, ip := range running[name].IPs {
			delete(taken, ip)
		}
	}
}
