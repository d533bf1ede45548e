package reclaim_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/sandboxipam/sandboxipam/cluster/reclaim"
	"github.com/sandboxipam/sandboxipam/internal/testsupport"
	"github.com/sandboxipam/sandboxipam/ipamd/ipsource/pool/lease"
)

// TestReclaimKeepsABlockWhileIpamdRenews is issue 37's first hole on a
// real API server: a node's kubelet stopped, its Node deleted (its node
// Lease goes with it), its Pods deleted, while its ipamd runs and renews
// its own Lease (the real renewer). Three conditions hold; the block is
// kept for the fourth, and the decision names ipamd's Lease. Once ipamd
// stops renewing, the block goes a grace after the last change the
// reclaimer saw, with the four items of evidence.
func TestReclaimKeepsABlockWhileIpamdRenews(t *testing.T) {
	env := apiServer(t)
	clk := clocktesting.NewFakeClock(t0)
	logs := &testsupport.Buffer{}
	r := newReclaimer(t, env, testConfig(5*time.Minute), "reclaimer-ipamd", clk, logs, nil)
	if err := r.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	n := env.Node(t, "live-n1")
	ipamd, err := lease.New(env.Client, lease.Options{Namespace: "kube-system", Node: "live-n1",
		RenewInterval: 10 * time.Second, FenceAfter: 2 * time.Minute, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	ipamd.SetUID(string(n.UID))
	if err := ipamd.Renew(t.Context()); err != nil {
		t.Fatal(err)
	}
	b := confirmGone(t, env, env.Block(t, "default", "198.18.5.0/26", "live-n1", n.UID))
	env.Pod(t, "live", "web-1", "live-n1", "198.18.5.5")
	// kubelet stopped: its Lease never renewed (absent here); the Node and
	// the pod are deleted, as kubectl delete node and PodGC do.
	env.DeleteNode(t, "live-n1")
	env.DeletePod(t, "live", "web-1")
	waitPass(t, r, "the Node and the pod seen gone", func(p reclaim.Pass) bool {
		v, ok := p.Verdict(b.Name)
		return ok && strings.HasPrefix(v.Keep, "Lease kube-node-lease/live-n1 absent")
	})
	// ipamd renews 3 minutes on. Whichever pass first sees the renewal
	// records it (no field of a pass says when), so the checks below hold
	// for a sighting at 3m or at any later pass.
	clk.Step(3 * time.Minute)
	if err := ipamd.Renew(t.Context()); err != nil {
		t.Fatal(err)
	}
	const name = "ipamd Lease kube-system/sandboxipam-ipamd-live-n1"
	keptForIpamd := func(p reclaim.Pass) bool {
		v, ok := p.Verdict(b.Name)
		return ok && strings.HasPrefix(v.Keep, name+" last seen to change ") && strings.HasSuffix(v.Keep, "within the grace 5m0s: ipamd may live")
	}
	// 6 minutes on: Node, kubelet Lease and pod gone for longer than the
	// grace; only ipamd's renewal keeps the block.
	clk.Step(3 * time.Minute)
	p := waitPass(t, r, "the block kept for ipamd's Lease alone", keptForIpamd)
	d := decision(p, b.Name)
	if !d.NodeGone || !d.LeaseExpired || len(d.Pods) != 0 || d.IpamdStopped || len(p.Reclaimed) != 0 || blockGone(t, env, b.Name) {
		t.Fatalf("a block under a live ipamd: %+v", p)
	}
	// ipamd stops renewing: a grace after the last change seen (at the
	// latest 6m), it goes.
	clk.SetTime(t0.Add(11*time.Minute + time.Second))
	p = runOnce(t, r)
	if !slices.Equal(p.Reclaimed, []string{b.Name}) || !blockGone(t, env, b.Name) {
		t.Fatalf("ipamd stopped: %+v", p)
	}
	evs := events(t, env, b)
	if len(evs) != 1 || !strings.Contains(evs[0].Message, "; "+name+" unchanged for ") ||
		!strings.HasSuffix(evs[0].Message, "in the reclaimer's sight, longer than the grace 5m0s; an operator confirmed node live-n1 (UID "+string(n.UID)+") gone (annotation sandboxipam.io/confirm-node-gone on the block)") {
		t.Fatalf("Events on %s: %+v", b.Name, evs)
	}
}

func decision(p reclaim.Pass, block string) reclaim.Decision {
	for _, d := range p.Decisions {
		if d.Block == block {
			return d
		}
	}
	return reclaim.Decision{}
}
