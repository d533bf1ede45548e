package kubernetes

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/netip"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/sandboxipam/sandboxipam/cluster/api/v1alpha1"
	"github.com/sandboxipam/sandboxipam/internal/testsupport"
)

// claimHold stands in, on one node, for the kubernetes Service's address
// as kube-proxy would: the node's loopback holds the address and a
// reverse proxy in the test listens there with the API server's own
// serving certificate, so every in-cluster client of that node (its
// ipamd, maybe a reclaimer replica) reaches the real API server through
// it, unchanged. One thing differs: the first IPBlock create it sees
// reaches the API server, and its answer is held back. The block is then
// claimed in the API server and ipamd has not heard so, so it cannot
// have journaled the claim: a SIGKILL now lands between the two by
// construction.
type claimHold struct {
	n       *clusterNode
	srv     *http.Server
	created chan string // the held block's name, once
	release chan struct{}
	first   sync.Once
	done    sync.Once
	t       *testing.T
}

// holdFirstClaim puts the proxy in place on node n, before n's ipamd
// starts, so its very first claim is the one held.
func (c *cluster) holdFirstClaim(t *testing.T, n *clusterNode) *claimHold {
	t.Helper()
	target, err := url.Parse(c.cp.URL)
	if err != nil {
		t.Fatal(err)
	}
	inNetNS(t, n.netns, "ip", "addr", "add", kubernetesServiceIP+"/32", "dev", "lo")
	l, err := listenIn(n.netns, net.JoinHostPort(kubernetesServiceIP, "443"))
	if err != nil {
		t.Fatal(err)
	}
	h := &claimHold{n: n, created: make(chan string, 1), release: make(chan struct{}), t: t}
	rp := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) { r.SetURL(target) },
		// The API server's own transport: its CA, dialled from the hub.
		Transport:      c.cp.HTTPClient().Transport,
		FlushInterval:  -1, // watches stream
		ModifyResponse: h.hold,
		ErrorLog:       log.New(io.Discard, "", 0),
	}
	h.srv = &http.Server{Handler: rp, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = h.srv.ServeTLS(l, c.cp.PKI.ServerCert, c.cp.PKI.ServerKey) }()
	t.Cleanup(h.remove)
	c.logf(t, "%s reaches the API server through the test's proxy on %s:443, which holds back the answer to its first IPBlock create", n.name, kubernetesServiceIP)
	return h
}

// hold holds back the answer to the first successful IPBlock create
// until remove, after it told the test which block was created.
func (h *claimHold) hold(resp *http.Response) error {
	req := resp.Request
	if req.Method != http.MethodPost || req.URL.Path != ipblocksPath || resp.StatusCode != http.StatusCreated {
		return nil
	}
	held := false
	h.first.Do(func() { held = true })
	if !held {
		return nil
	}
	var b v1alpha1.IPBlock
	body, err := io.ReadAll(resp.Body)
	if err == nil {
		err = json.Unmarshal(body, &b)
	}
	if err != nil || b.Name == "" {
		h.t.Errorf("the held IPBlock create answered %s: %v", body, err)
	}
	h.created <- b.Name
	<-h.release
	return errors.New("the answer to this IPBlock create was held until its client was killed")
}

// remove lets a held answer go (to a client that is gone), stops the
// proxy and gives the Service's address back to the hub; the node's
// clients reconnect there. Calling it again does nothing.
func (h *claimHold) remove() {
	h.done.Do(func() {
		close(h.release)
		_ = h.srv.Close()
		if _, err := runCtx(context.Background(), "nsenter", "--net="+h.n.netns, "--", "ip", "addr", "del", kubernetesServiceIP+"/32", "dev", "lo"); err != nil {
			h.t.Errorf("%s: give the Service's address back: %v", h.n.name, err)
		}
	})
}

// killDuringClaim waits until node h.n's ipamd has claimed its first
// block through the proxy, SIGKILLs it while the API server's answer is
// held, and checks that the block is in the API server under the node's
// UID, and that the restarted ipamd adopts it: it is in its pool, in use.
// It returns the block.
//
// This runs inside the cluster, on the DaemonSet's own ipamd, rather than
// on an ipamd the test would start by hand: the kill, the journal it
// leaves, the restart and the adoption are those of a node, and the pods
// the test runs next get their addresses from the adopted block.
func (c *cluster) killDuringClaim(t *testing.T, h *claimHold) netip.Prefix {
	t.Helper()
	n := h.n
	var name string
	select {
	case name = <-h.created:
	case <-time.After(3 * time.Minute):
		t.Fatalf("%s's ipamd created no IPBlock through the proxy", n.name)
	}
	old := n.killIPAMD(t)
	h.remove()
	ctx := context.Background()
	var b v1alpha1.IPBlock
	if err := c.api.get(ctx, ipblocksPath+"/"+name, &b); err != nil {
		t.Fatalf("the IPBlock created before the kill: %v", err)
	}
	info, err := c.getNode(ctx, n.name)
	if err != nil {
		t.Fatal(err)
	}
	p, err := b.Spec.Prefix()
	if err != nil || b.Spec.NodeName != n.name || b.Spec.NodeUID != info.UID {
		t.Fatalf("IPBlock %s: %+v (%v), want node %s UID %s", name, b.Spec, err, n.name, info.UID)
	}
	c.logf(t, "ipamd SIGKILLed on %s while the API server's answer to its claim of %s was held: the IPBlock exists, the journal cannot have it", n.name, p)
	c.waitNewIPAMD(t, n, old)
	testsupport.WaitFor(t, 2*time.Minute, n.name+"'s restarted ipamd adopts "+p.String(), func(ctx context.Context) error {
		pool, err := n.pool(ctx)
		if err != nil {
			return err
		}
		for _, r := range pool.Ranges {
			if r.Prefix == p.String() && !r.Retiring {
				return nil
			}
		}
		return errors.New("not in its pool's ranges")
	})
	c.logf(t, "%s's restarted ipamd adopted %s (its IPBlock carries the node's UID)", n.name, p)
	return p
}

// checkBlocksHeld waits until every live node's ipamd holds exactly the
// IPBlocks the API server records for it: no block is claimed that no
// ipamd holds, and no ipamd hands out a block it has no claim on.
func (c *cluster) checkBlocksHeld(t *testing.T) {
	t.Helper()
	testsupport.WaitFor(t, 2*time.Minute, "every node's ipamd holds exactly its IPBlocks", func(ctx context.Context) error {
		bs, err := c.ipBlocks(ctx)
		if err != nil {
			return err
		}
		inAPI := map[string][]string{}
		for _, b := range bs {
			inAPI[b.Spec.NodeName] = append(inAPI[b.Spec.NodeName], b.Spec.CIDR)
		}
		for _, n := range c.live() {
			pool, err := n.pool(ctx)
			if err != nil {
				return err
			}
			var held []string
			for _, r := range pool.Ranges {
				if !r.Retiring {
					held = append(held, r.Prefix)
				}
			}
			if !sameSet(held, inAPI[n.name]) {
				return fmt.Errorf("%s's ipamd holds %v, the API server records %v", n.name, sorted(held), sorted(inAPI[n.name]))
			}
		}
		return nil
	})
}
