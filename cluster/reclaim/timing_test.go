package reclaim_test

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/sandboxipam/sandboxipam/cluster/api/ipamdlease"
	"github.com/sandboxipam/sandboxipam/cluster/api/v1alpha1"
	"github.com/sandboxipam/sandboxipam/cluster/reclaim"
	"github.com/sandboxipam/sandboxipam/internal/clusterfixture"
	"github.com/sandboxipam/sandboxipam/internal/testsupport"
	"github.com/sandboxipam/sandboxipam/ipamd/ipsource/pool/lease"
)

// Issue 44, path 5, on a real API server with the real renewer: an
// operator deletes a cut-off node's ipamd Lease. The reclaimer, run with
// --grace 1m, keeps the longest leaseDuration it saw of the Lease (130s,
// ipamd's fence plus its renew interval) and waits it out with the
// clocks' rate error (134s) from the delete, not the grace: kept 61s
// after the delete (where it once reclaimed), and at 134s; reclaimed past
// it. Before ipamd's Lease is first seen, it waits the longest duration
// ipamd accepts.
func TestReclaimWaitsOutADeletedIpamdLease(t *testing.T) {
	env := apiServer(t)
	clk := clocktesting.NewFakeClock(t0)
	r := newReclaimer(t, env, testConfig(time.Minute), "reclaimer-deleted", clk, &testsupport.Buffer{}, nil)
	if err := r.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	n := env.Node(t, "deleted-n1")
	b := confirmedBlock(t, env, "198.18.44.0/26", "deleted-n1", n.UID)
	env.DeleteNode(t, "deleted-n1")
	waitNodeGone(t, r, b)
	// Past the grace for the kubelet's Lease (absent); ipamd's not yet
	// written: the longest duration ipamd accepts is assumed.
	clk.Step(2 * time.Minute)
	const name = "ipamd Lease kube-system/sandboxipam-ipamd-deleted-n1"
	p := runOnce(t, r)
	if !keepReason(p, b.Name, name+" absent, but only for 2m0s in the reclaimer's sight, not longer than 5m0s: "+
		"no leaseDuration seen, so the longest ipamd accepts, 4m53s, with clock-rate error 1% (longer than the grace 1m0s)") {
		t.Fatalf("before ipamd's Lease was seen: %+v", p.Decisions)
	}

	ipamd, err := lease.New(env.Client, lease.Options{Namespace: "kube-system", Node: "deleted-n1",
		RenewInterval: 10 * time.Second, FenceAfter: 2 * time.Minute, Clock: clocktesting.NewFakeClock(t0)})
	if err != nil {
		t.Fatal(err)
	}
	ipamd.SetUID(string(n.UID))
	if err := ipamd.Renew(t.Context()); err != nil {
		t.Fatal(err)
	}
	const wait = "2m14s: its leaseDuration 2m10s with clock-rate error 1% (longer than the grace 1m0s)"
	waitPass(t, r, "ipamd's Lease seen", func(p reclaim.Pass) bool {
		return keepReason(p, b.Name, name+" last seen to change 0s ago, within "+wait+": ipamd may live")
	})
	// ipamd is cut off; 10s on, an operator deletes its Lease.
	clk.Step(10 * time.Second)
	if err := env.Client.CoordinationV1().Leases("kube-system").Delete(t.Context(), ipamdlease.IpamdLeaseName("deleted-n1"), metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	p = waitPass(t, r, "the delete seen", func(p reclaim.Pass) bool {
		v, _ := p.Verdict(b.Name)
		return strings.HasPrefix(v.Keep, name+" absent, but only for 0s") || v.Reclaim
	})
	if !keepReason(p, b.Name, name+" absent, but only for 0s in the reclaimer's sight, not longer than "+wait) {
		t.Fatalf("the Lease just deleted: %+v", p.Decisions)
	}
	for _, quiet := range []time.Duration{61 * time.Second, 134 * time.Second} {
		clk.SetTime(t0.Add(2*time.Minute + 10*time.Second + quiet))
		if p := runOnce(t, r); len(p.Reclaimed) != 0 || blockGone(t, env, b.Name) ||
			!keepReason(p, b.Name, fmt.Sprintf("%s absent, but only for %s in the reclaimer's sight, not longer than %s", name, quiet, wait)) {
			t.Fatalf("%s after the delete: %+v", quiet, p)
		}
	}
	clk.Step(time.Second)
	if p := runOnce(t, r); !slices.Equal(p.Reclaimed, []string{b.Name}) || !blockGone(t, env, b.Name) {
		t.Fatalf("2m15s after the delete: %+v", p)
	}
}

// Issue 44, path 6, on a real API server with the real renewer: the
// reclaimer runs with --grace 1m; its clock runs 1% fast and ipamd's 1%
// slow (the bad way), both fake and set from one real time stepped by
// half a second. ipamd renews once and is cut off; it has fenced, even
// with the renew in flight hung for its full renewInterval, once its
// Lease's duration (130s) has passed on its own clock. At every step the
// reclaimer has not deleted the block before then; it deletes it at the
// first step past its wait (134s on its clock: 133s real, when ipamd's
// clock reads 131.67s).
func TestReclaimNeverBeforeIpamdFencesWithClocksApart(t *testing.T) {
	env := apiServer(t)
	rclk, iclk := clocktesting.NewFakeClock(t0), clocktesting.NewFakeClock(t0)
	r := newReclaimer(t, env, testConfig(time.Minute), "reclaimer-skew", rclk, &testsupport.Buffer{}, nil)
	if err := r.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	n := env.Node(t, "skew-n1")
	b := confirmedBlock(t, env, "198.18.45.0/26", "skew-n1", n.UID)
	env.DeleteNode(t, "skew-n1")
	waitNodeGone(t, r, b)
	rclk.Step(2 * time.Minute) // the kubelet's Lease absent past the grace

	ipamd, err := lease.New(env.Client, lease.Options{Namespace: "kube-system", Node: "skew-n1",
		RenewInterval: 10 * time.Second, FenceAfter: 2 * time.Minute, Clock: iclk})
	if err != nil {
		t.Fatal(err)
	}
	ipamd.SetUID(string(n.UID))
	if err := ipamd.Renew(t.Context()); err != nil {
		t.Fatal(err)
	}
	const name = "ipamd Lease kube-system/sandboxipam-ipamd-skew-n1"
	waitPass(t, r, "ipamd's renew seen", func(p reclaim.Pass) bool {
		v, _ := p.Verdict(b.Name)
		return strings.HasPrefix(v.Keep, name+" last seen to change 0s ago")
	})
	rbase, ibase := rclk.Now(), iclk.Now() // the renew was sent at ibase
	const e = ipamdlease.ClockRateError
	scaled := func(d time.Duration, rate float64) time.Duration { return time.Duration(float64(d) * rate) }
	for real := 500 * time.Millisecond; ; real += 500 * time.Millisecond {
		rclk.SetTime(rbase.Add(scaled(real, 1+e)))
		iclk.SetTime(ibase.Add(scaled(real, 1-e)))
		p := runOnce(t, r)
		fenced := iclk.Since(ibase) > ipamd.Duration()
		if len(p.Reclaimed) == 0 {
			if real > 140*time.Second {
				t.Fatalf("not reclaimed %s (real) after the renew: %+v", real, p)
			}
			continue
		}
		if !fenced || ipamd.Fresh() {
			t.Fatalf("reclaimed at %s on the reclaimer's clock, %s real, while ipamd's clock reads %s since its renew: not yet past its duration %s, so it may still hand out addresses",
				rclk.Since(rbase), real, iclk.Since(ibase), ipamd.Duration())
		}
		if real != 133*time.Second || !slices.Equal(p.Reclaimed, []string{b.Name}) {
			t.Fatalf("reclaimed %q %s (real) after the renew, want %s at 2m13s", p.Reclaimed, real, b.Name)
		}
		return
	}
}

// confirmedBlock claims cidr for node, as ipamd does, with an operator's
// confirmation that the node is gone (annotation
// ipamdlease.ConfirmNodeGoneAnnotation): the evidence of the second
// channel, so that these tests turn on ipamd's Lease alone.
func confirmedBlock(t *testing.T, env *clusterfixture.Env, cidr, node string, uid types.UID) v1alpha1.IPBlock {
	t.Helper()
	b := v1alpha1.NewBlock("default", netip.MustParsePrefix(cidr), node, string(uid), metav1.NewTime(t0))
	b.Annotations = map[string]string{ipamdlease.ConfirmNodeGoneAnnotation: string(uid)}
	u, err := v1alpha1.ToUnstructured(&b)
	if err != nil {
		t.Fatal(err)
	}
	got, err := env.Dynamic.Resource(v1alpha1.IPBlockResource).Create(t.Context(), u, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create IPBlock %s: %v", b.Name, err)
	}
	if b, err = v1alpha1.BlockFrom(got); err != nil {
		t.Fatal(err)
	}
	return b
}

// waitNodeGone runs passes until one judges b with its Node seen gone.
func waitNodeGone(t *testing.T, r *reclaim.Reclaimer, b v1alpha1.IPBlock) {
	t.Helper()
	waitPass(t, r, "the Node of "+b.Name+" seen gone", func(p reclaim.Pass) bool {
		for _, d := range p.Decisions {
			if d.Block == b.Name {
				return d.NodeGone
			}
		}
		return false
	})
}
