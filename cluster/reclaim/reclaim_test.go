package reclaim_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/sandboxipam/sandboxipam/cluster/api/v1alpha1"
	"github.com/sandboxipam/sandboxipam/cluster/reclaim"
	"github.com/sandboxipam/sandboxipam/internal/testsupport"
)

// TestReclaimOnlyOnEvidence walks a dead node's blocks through the three
// conditions on a real API server, with the reclaimer's clock stepped by
// the test: a deleted Node whose pod still exists in the API keeps its
// block; a Lease renewed within the grace keeps them all; once the pod is
// gone and the Lease expired, each block is reclaimed exactly once, with
// one Event and one log line naming the evidence. A block of a node
// registered again under another UID is reclaimed the same way.
func TestReclaimOnlyOnEvidence(t *testing.T) {
	env := apiServer(t)
	clk := clocktesting.NewFakeClock(t0)
	logs := &testsupport.Buffer{}
	r := newReclaimer(t, env, testConfig(5*time.Minute), "reclaimer-ev", clk, logs, nil)
	if err := r.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	n1, n2, n3 := env.Node(t, "ev-n1"), env.Node(t, "ev-n2"), env.Node(t, "ev-n3")
	env.RenewLease(t, "ev-n1", t0)
	env.RenewLease(t, "ev-n2", t0)
	withPod := env.Block(t, "default", "198.18.1.0/26", "ev-n1", n1.UID)
	empty := env.Block(t, "default", "198.18.1.64/26", "ev-n1", n1.UID)
	live := env.Block(t, "default", "198.18.1.128/26", "ev-n2", n2.UID)
	// A claim of ev-n3's former self: its Node was registered again.
	stale := env.Block(t, "default", "198.18.1.192/26", "ev-n3", "ev-n3-former-uid")
	// An operator confirms ev-n1's and ev-n3's former self's machines
	// gone: condition (e), tested in alive_test.go.
	withPod, empty, stale = confirmGone(t, env, withPod), confirmGone(t, env, empty), confirmGone(t, env, stale)
	env.Pod(t, "evidence", "web-1", "ev-n1", "198.18.1.5")
	env.Pod(t, "evidence", "web-2", "ev-n2", "198.18.1.130")

	p := waitPass(t, r, "ev-n1's blocks judged with ev-n1 alive", func(p reclaim.Pass) bool {
		return keepReason(p, empty.Name, "Node ev-n1 exists with the block's UID "+string(n1.UID)) &&
			keepReason(p, live.Name, "Node ev-n2 exists with the block's UID "+string(n2.UID))
	})
	if !keepReason(p, stale.Name, "Lease kube-node-lease/ev-n3 absent, but only for 0s in the reclaimer's sight, not longer than the grace 5m0s") {
		t.Fatalf("the stale claim: %+v", p.Decisions)
	}

	// The Node is deleted; its kubelet, its Lease and its pod live on.
	env.DeleteNode(t, "ev-n1")
	waitPass(t, r, "ev-n1 seen deleted", func(p reclaim.Pass) bool {
		return keepReason(p, empty.Name, "Lease kube-node-lease/ev-n1 renewed at 2026-12-03T10:00:00Z and last seen to change 0s ago: within the grace 5m0s")
	})
	clk.Step(4 * time.Minute)
	env.RenewLease(t, "ev-n1", t0.Add(4*time.Minute))
	waitPass(t, r, "ev-n1's renewal seen", func(p reclaim.Pass) bool {
		return keepReason(p, empty.Name, "Lease kube-node-lease/ev-n1 renewed at 2026-12-03T10:04:00Z and last seen to change 0s ago: within the grace 5m0s")
	})
	// 8 minutes after t0, 4 after the renewal: without it the block would
	// go. The stale claim, whose Lease has been absent since t0, goes.
	clk.Step(4 * time.Minute)
	p = runOnce(t, r)
	if !keepReason(p, empty.Name, "Lease kube-node-lease/ev-n1 renewed at 2026-12-03T10:04:00Z and last seen to change 4m0s ago: within the grace 5m0s") ||
		!slices.Equal(p.Reclaimed, []string{stale.Name}) || blockGone(t, env, empty.Name) {
		t.Fatalf("a Lease renewed within the grace: %+v", p)
	}

	// Past the grace since the renewal: the empty block goes; the block a
	// pod still has an address in stays.
	clk.SetTime(t0.Add(9*time.Minute + time.Second))
	p = runOnce(t, r)
	if !slices.Equal(p.Reclaimed, []string{empty.Name}) || len(p.Errors) != 0 {
		t.Fatalf("past the grace: reclaimed %q, errors %q, decisions %+v", p.Reclaimed, p.Errors, p.Decisions)
	}
	if !keepReason(p, withPod.Name, "pods still hold addresses in 198.18.1.0/26: evidence/web-1 198.18.1.5") ||
		!keepReason(p, live.Name, "Node ev-n2 exists with the block's UID "+string(n2.UID)) {
		t.Fatalf("kept blocks: %+v", p.Decisions)
	}
	if got := gauge(t, r.Metrics().Registry(), "sandboxipam_reclaimer_blocks_awaiting_evidence"); got != 1 {
		t.Errorf("sandboxipam_reclaimer_blocks_awaiting_evidence %v, want 1 (the block web-1 holds an address in)", got)
	}
	for _, c := range []struct {
		block    v1alpha1.IPBlock
		evidence string
	}{
		{empty, "Reclaimed 198.18.1.64/26 of node ev-n1 (UID " + string(n1.UID) + "): Node ev-n1 (UID " + string(n1.UID) + ") does not exist; " +
			"Lease kube-node-lease/ev-n1 renewed at 2026-12-03T10:04:00Z, unchanged for 5m1s in the reclaimer's sight, longer than the grace 5m0s; " +
			"no Pod has a status.podIPs address in 198.18.1.64/26; " +
			"ipamd Lease kube-system/sandboxipam-ipamd-ev-n1 absent for 9m1s in the reclaimer's sight, longer than the grace 5m0s; " +
			"an operator confirmed node ev-n1 (UID " + string(n1.UID) + ") gone (annotation sandboxipam.io/confirm-node-gone on the block)"},
		{stale, "Reclaimed 198.18.1.192/26 of node ev-n3 (UID ev-n3-former-uid): Node ev-n3 has UID " + string(n3.UID) +
			", not the claim's ev-n3-former-uid (registered again); Lease kube-node-lease/ev-n3 absent for 8m0s in the reclaimer's sight, longer than the grace 5m0s; " +
			"no Pod has a status.podIPs address in 198.18.1.192/26; " +
			"ipamd Lease kube-system/sandboxipam-ipamd-ev-n3 absent for 8m0s in the reclaimer's sight, longer than the grace 5m0s; " +
			"an operator confirmed node ev-n3 (UID ev-n3-former-uid) gone (annotation sandboxipam.io/confirm-node-gone on the block)"},
	} {
		if !blockGone(t, env, c.block.Name) {
			t.Errorf("%s still in the API after its reclaim", c.block.Name)
		}
		evs := events(t, env, c.block)
		if len(evs) != 1 || evs[0].Reason != reclaim.EventReason || evs[0].Message != c.evidence ||
			evs[0].ReportingInstance != "reclaimer-ev" || evs[0].InvolvedObject.Kind != "IPBlock" {
			t.Errorf("Events on %s: %+v, want one %q", c.block.Name, evs, c.evidence)
		}
		if n := strings.Count(logs.String(), "reclaimed the block of a dead node\" block="+c.block.Name); n != 1 {
			t.Errorf("%d log lines of reclaiming %s, want 1:\n%s", n, c.block.Name, logs.String())
		}
	}

	// Once the pod is gone from the API, its block goes too, once.
	env.DeletePod(t, "evidence", "web-1")
	p = waitPass(t, r, "the block of the deleted pod reclaimed", func(p reclaim.Pass) bool { return len(p.Reclaimed) > 0 || len(p.Errors) > 0 })
	if !slices.Equal(p.Reclaimed, []string{withPod.Name}) || len(p.Errors) != 0 {
		t.Fatalf("after the pod went: %+v", p)
	}
	waitPass(t, r, "the reclaimed blocks gone from the cache", func(p reclaim.Pass) bool {
		_, a := p.Verdict(withPod.Name)
		_, b := p.Verdict(empty.Name)
		return !a && !b
	})
	for _, b := range []v1alpha1.IPBlock{withPod, empty, stale} {
		if evs := events(t, env, b); len(evs) != 1 {
			t.Errorf("%d Events on %s, want exactly 1", len(evs), b.Name)
		}
	}
	if got := gauge(t, r.Metrics().Registry(), "sandboxipam_reclaimer_blocks_reclaimed_total"); got != 3 {
		t.Errorf("sandboxipam_reclaimer_blocks_reclaimed_total %v, want 3", got)
	}
	if blockGone(t, env, live.Name) {
		t.Fatal("the live node's block was reclaimed")
	}
}
