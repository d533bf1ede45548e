package reclaim_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"sync/atomic"
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
	"github.com/sandboxipam/sandboxipam/ipamd/aliveness"
	"github.com/sandboxipam/sandboxipam/ipamd/ipsource/pool/lease"
)

// confirmGone writes an operator's confirmation that the machine of the
// block's node is gone (ipamdlease.ConfirmNodeGoneAnnotation: the UID)
// and returns the block as written. The tests of conditions (a) to (d)
// use it for condition (e), whose own tests are below.
func confirmGone(t *testing.T, env *clusterfixture.Env, b v1alpha1.IPBlock) v1alpha1.IPBlock {
	t.Helper()
	return annotate(t, env, b.Name, b.Spec.NodeUID)
}

func annotate(t *testing.T, env *clusterfixture.Env, block, uid string) v1alpha1.IPBlock {
	t.Helper()
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{ipamdlease.ConfirmNodeGoneAnnotation: uid}}})
	if err != nil {
		t.Fatal(err)
	}
	u, err := env.Dynamic.Resource(v1alpha1.IPBlockResource).Patch(t.Context(), block, types.MergePatchType, patch, metav1.PatchOptions{})
	if err != nil {
		t.Fatalf("annotate IPBlock %s: %v", block, err)
	}
	b, err := v1alpha1.BlockFrom(u)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// aliveIpamd is a node's ipamd as far as the reclaimer can see it: the
// real alive answer (package aliveness) on a loopback address, and the
// real Lease renewer recording that address in the ipamd Lease.
type aliveIpamd struct {
	answer atomic.Pointer[ipamdlease.Alive]
	srv    *aliveness.Server
	stop   func()
}

func startAliveIpamd(t *testing.T, env *clusterfixture.Env, node string, uid types.UID, blocks ...string) *aliveIpamd {
	t.Helper()
	a := &aliveIpamd{}
	a.answer.Store(&ipamdlease.Alive{Node: node, NodeUID: string(uid), Blocks: blocks})
	srv, err := aliveness.Listen([]netip.AddrPort{netip.MustParseAddrPort("127.0.0.1:0")}, func() ipamdlease.Alive { return *a.answer.Load() }, newLogger())
	if err != nil {
		t.Fatal(err)
	}
	a.srv = srv
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { srv.Serve(ctx); close(done) }()
	a.stop = func() { cancel(); <-done }
	t.Cleanup(a.stop)
	r, err := lease.New(env.Client, lease.Options{Namespace: "kube-system", Node: node, RenewInterval: 10 * time.Second,
		FenceAfter: 2 * time.Minute, Clock: clocktesting.NewFakeClock(t0), AliveAddresses: srv.Addresses()})
	if err != nil {
		t.Fatal(err)
	}
	r.SetUID(string(uid))
	if err := r.Renew(t.Context()); err != nil {
		t.Fatal(err)
	}
	return a
}

func (a *aliveIpamd) address() string { return a.srv.Addresses()[0].String() }

// TestReclaimKeepsABlockWhileItsNodeAnswers is issue 44's path 7 on a
// real API server with the real reclaimer: a node cut off from the API
// server alone. Its Node and Pods are deleted, its kubelet Lease is gone
// and its ipamd Lease is stale past the grace (ipamd cannot reach the API
// server), so conditions (a) to (d) hold; but its ipamd answers on the
// node's address, recorded in its Lease, and the block is kept (before
// condition (e), it was reclaimed here, and the node's running pods' addresses
// handed out again). A forged answer (this node's name, another UID)
// keeps nothing and proves nothing: still no reclaim, however long. Once
// nothing answers, the block goes a grace later, the silence named in
// the Event.
func TestReclaimKeepsABlockWhileItsNodeAnswers(t *testing.T) {
	env := apiServer(t)
	clk := clocktesting.NewFakeClock(t0)
	r := newReclaimer(t, env, testConfig(5*time.Minute), "reclaimer-alive", clk, &testsupport.Buffer{}, nil)
	n := env.Node(t, "part-n1")
	b := env.Block(t, "default", "198.18.9.0/26", "part-n1", n.UID)
	ipamd := startAliveIpamd(t, env, "part-n1", n.UID, b.Spec.CIDR)
	// Started once ipamd's Lease exists: its first pass sees the Lease at
	// t0, whenever the watch delivers it.
	if err := r.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	env.Pod(t, "partition", "web-1", "part-n1", "198.18.9.5")
	// Cut off from the API server: the Node and its pod are deleted (the
	// pod runs on), nothing renews either Lease.
	env.DeleteNode(t, "part-n1")
	env.DeletePod(t, "partition", "web-1")
	node := fmt.Sprintf("node part-n1 (UID %s)", n.UID)
	aliveWords := fmt.Sprintf("the ipamd of %s answered alive 0s ago (%s: node part-n1, UID %q, blocks [198.18.9.0/26]), within the grace 5m0s: the node may still run pods on 198.18.9.0/26",
		node, ipamd.address(), n.UID)
	waitPass(t, r, "the Node and the pod seen gone", func(p reclaim.Pass) bool {
		d := decision(p, b.Name)
		return d.NodeGone && len(d.Pods) == 0 && strings.HasPrefix(d.Keep, "Lease kube-node-lease/part-n1 absent, but only for 0s")
	})

	clk.Step(5*time.Minute + time.Second)
	p := runOnce(t, r)
	d := decision(p, b.Name)
	if !d.NodeGone || !d.LeaseExpired || len(d.Pods) != 0 || !d.IpamdStopped || d.NodeDead || d.Keep != aliveWords ||
		len(p.Reclaimed) != 0 || blockGone(t, env, b.Name) {
		t.Fatalf("a block of a node that answers: %+v, want kept for %q", p, aliveWords)
	}

	// A forged answer: this node's name under another UID, without the
	// block. It is not the node, so it keeps nothing once the last true
	// answer is older than the grace; it is not silence either.
	ipamd.answer.Store(&ipamdlease.Alive{Node: "part-n1", NodeUID: "forged-uid", Blocks: []string{}})
	forged := fmt.Sprintf("another machine answered on an address of %s (%s: node part-n1, UID \"forged-uid\"): neither alive nor gone; confirm with annotation %s: %s on the block",
		node, ipamd.address(), ipamdlease.ConfirmNodeGoneAnnotation, n.UID)
	for range 3 {
		clk.Step(5*time.Minute + time.Second)
		p = runOnce(t, r)
		if d := decision(p, b.Name); d.NodeDead || d.Keep != forged || len(p.Reclaimed) != 0 || blockGone(t, env, b.Name) {
			t.Fatalf("a forged answer: %+v, want kept for %q", p, forged)
		}
	}

	// Nothing answers any more: silent for the grace, kept; past it,
	// reclaimed.
	ipamd.stop()
	silentAt := clk.Now()
	p = runOnce(t, r)
	if d := decision(p, b.Name); !strings.HasPrefix(d.Keep, "no answer from the ipamd of "+node+" on "+ipamd.address()+" for 0s, not longer than the grace 5m0s") {
		t.Fatalf("the first silence: %+v", d)
	}
	clk.SetTime(silentAt.Add(5 * time.Minute))
	p = runOnce(t, r)
	if d := decision(p, b.Name); d.Keep != "no answer from the ipamd of "+node+" on "+ipamd.address()+" for 5m0s, not longer than the grace 5m0s" {
		t.Fatalf("silent for exactly the grace: %+v", d)
	}
	clk.Step(time.Second)
	p = runOnce(t, r)
	if !slices.Equal(p.Reclaimed, []string{b.Name}) || !blockGone(t, env, b.Name) {
		t.Fatalf("silent past the grace: %+v", p)
	}
	evs := events(t, env, b)
	want := "; no answer from the ipamd of " + node + " on " + ipamd.address() + " for 5m1s, longer than the grace 5m0s (last: " + ipamd.address() + ": no answer: "
	if len(evs) != 1 || !strings.Contains(evs[0].Message, want) || !strings.Contains(evs[0].Message, "connection refused") {
		t.Fatalf("Events on %s: %+v, want one naming %q", b.Name, evs, want)
	}
}

// TestReclaimWithoutAnAddressNeedsTheOperator: a node whose ipamd Lease
// records no address cannot be asked, so past the grace its block stays
// until an operator confirms the node gone, naming its Node's UID; a
// confirmation naming another UID (a former Node of that name) is not
// one. An answer as the node, within the grace, outweighs even the
// operator's word.
func TestReclaimWithoutAnAddressNeedsTheOperator(t *testing.T) {
	env := apiServer(t)
	clk := clocktesting.NewFakeClock(t0)
	r := newReclaimer(t, env, testConfig(5*time.Minute), "reclaimer-operator", clk, &testsupport.Buffer{}, nil)
	quiet := env.Block(t, "default", "198.18.10.0/26", "op-n1", "op-n1-uid")
	talks := env.Block(t, "default", "198.18.10.64/26", "op-n2", "op-n2-uid")
	ipamd := startAliveIpamd(t, env, "op-n2", "op-n2-uid", talks.Spec.CIDR)
	// Started once op-n2's ipamd Lease exists: its first pass sees the
	// Lease at t0, whenever the watch delivers it.
	if err := r.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	waitPass(t, r, "both blocks judged", func(p reclaim.Pass) bool {
		_, a := p.Verdict(quiet.Name)
		_, b := p.Verdict(talks.Name)
		return a && b
	})
	clk.Step(5*time.Minute + time.Second)
	noAddress := "the ipamd Lease of node op-n1 (UID op-n1-uid) records no address to ask it on (annotation sandboxipam.io/alive-addresses): " +
		"only an operator's confirmation (annotation sandboxipam.io/confirm-node-gone: op-n1-uid on the block) can prove the node gone"
	if p := runOnce(t, r); !keepReason(p, quiet.Name, noAddress) || len(p.Reclaimed) != 0 {
		t.Fatalf("no address, no confirmation: %+v", p)
	}
	annotate(t, env, quiet.Name, "op-n1-former-uid")
	annotate(t, env, talks.Name, "op-n2-uid")
	waitPass(t, r, "the confirmation of a former Node seen, and proving nothing", func(p reclaim.Pass) bool {
		return keepReason(p, quiet.Name, noAddress+" (the annotation names UID op-n1-former-uid, not the block's)")
	})
	p := runOnce(t, r)
	if d := decision(p, talks.Name); !strings.HasPrefix(d.Keep, "the ipamd of node op-n2 (UID op-n2-uid) answered alive 0s ago") || blockGone(t, env, talks.Name) {
		t.Fatalf("confirmed, but the node answers: %+v", d)
	}
	confirmGone(t, env, quiet)
	p = waitPass(t, r, "the confirmed block reclaimed", func(p reclaim.Pass) bool { return len(p.Reclaimed) > 0 || len(p.Errors) > 0 })
	if !slices.Equal(p.Reclaimed, []string{quiet.Name}) || len(p.Errors) != 0 {
		t.Fatalf("confirmed: %+v", p)
	}
	evs := events(t, env, quiet)
	if len(evs) != 1 || !strings.HasSuffix(evs[0].Message, "; an operator confirmed node op-n1 (UID op-n1-uid) gone (annotation sandboxipam.io/confirm-node-gone on the block)") {
		t.Fatalf("Events on %s: %+v", quiet.Name, evs)
	}
	// The node that answers stops; the operator's word stands, and its
	// block goes once the last answer is older than the grace.
	ipamd.stop()
	clk.Step(5*time.Minute + time.Second)
	if p := runOnce(t, r); !slices.Equal(p.Reclaimed, []string{talks.Name}) {
		t.Fatalf("confirmed, the last answer past the grace: %+v", p)
	}
}
