package reclaim_test

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/sandboxipam/sandboxipam/cluster/api/ipamdlease"
	"github.com/sandboxipam/sandboxipam/cluster/reclaim"
	"github.com/sandboxipam/sandboxipam/internal/testsupport"
	"github.com/sandboxipam/sandboxipam/ipamd/aliveness"
)

// TestReclaimedNodeThatAnswersAgainIsReported is issue 44's case left, on
// a real API server with the real reclaimer and the real alive answer: a
// node cut off on both planes, its Node deleted, is reclaimed on silence;
// another node claims the block. Then the cut heals: the old node's
// ipamd answers again as the node it was, while its old pods may still
// run on the block's addresses. That ipamd cannot say so (the API server
// refuses its deleted pod's token); the reclaimer does, once: a Warning
// Event on the block the other node holds now, naming both nodes, an
// ERROR log line and the metric. A machine answering on the address as
// the node registered again (another UID, without the block) is not the
// node that was reclaimed, and is not reported.
func TestReclaimedNodeThatAnswersAgainIsReported(t *testing.T) {
	env := apiServer(t)
	clk := clocktesting.NewFakeClock(t0)
	logs := &testsupport.Buffer{}
	r := newReclaimer(t, env, testConfig(5*time.Minute), "reclaimer-returned", clk, logs, nil)
	n := env.Node(t, "ret-n1")
	b := env.Block(t, "default", "198.18.12.0/26", "ret-n1", n.UID)
	ipamd := startAliveIpamd(t, env, "ret-n1", n.UID, b.Spec.CIDR)
	addr := ipamd.address()
	if err := r.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	env.DeleteNode(t, "ret-n1")
	ipamd.stop()
	waitPass(t, r, "the Node seen gone", func(p reclaim.Pass) bool { return decision(p, b.Name).NodeGone })
	clk.Step(5*time.Minute + time.Second)
	if p := runOnce(t, r); !slices.Equal(p.Reclaimed, []string{b.Name}) || len(p.Returned) != 0 {
		t.Fatalf("silent past the grace: %+v, want %s reclaimed", p, b.Name)
	}
	reclaimedAt := clk.Now()

	// Another node claims the block and the reclaimer's cache sees it.
	n2 := env.Node(t, "ret-n2")
	again := env.Block(t, "default", "198.18.12.0/26", "ret-n2", n2.UID)
	waitPass(t, r, "the block claimed again seen", func(p reclaim.Pass) bool { return decision(p, again.Name).Node == "ret-n2" })

	// The node registered again under another UID answers on the address:
	// another machine as far as the reclaimed node goes.
	var answer atomic.Pointer[ipamdlease.Alive]
	answer.Store(&ipamdlease.Alive{Node: "ret-n1", NodeUID: "ret-n1-new-uid", Blocks: []string{}})
	serveAlive(t, addr, func() ipamdlease.Alive { return *answer.Load() })
	clk.Step(time.Minute)
	if p := runOnce(t, r); len(p.Returned) != 0 || len(events(t, env, again)) != 0 {
		t.Fatalf("the node registered again answers: %+v, want nothing reported", p)
	}

	// The old ipamd answers, as the node that was reclaimed.
	answer.Store(&ipamdlease.Alive{Node: "ret-n1", NodeUID: string(n.UID), Blocks: []string{b.Spec.CIDR}})
	clk.Step(time.Minute)
	p := runOnce(t, r)
	node := fmt.Sprintf("ret-n1 (UID %s)", n.UID)
	if !slices.Equal(p.Returned, []string{node}) {
		t.Fatalf("the reclaimed node answers again: %+v, want %s returned", p, node)
	}
	evs := events(t, env, again)
	want := fmt.Sprintf("The ipamd of node ret-n1 (UID %s), whose block 198.18.12.0/26 was reclaimed %s ago as dead, answers again "+
		"(%s: node ret-n1, UID %q, blocks [198.18.12.0/26]): pods still running there may hold addresses of 198.18.12.0/26, "+
		"which node ret-n2 holds now, until that node's kubelet kills them", n.UID, clk.Now().Sub(reclaimedAt), addr, n.UID)
	if len(evs) != 1 || evs[0].Type != corev1.EventTypeWarning || evs[0].Reason != reclaim.EventReasonReturned || evs[0].Message != want ||
		evs[0].ReportingInstance != "reclaimer-returned" {
		t.Fatalf("Events on %s: %+v, want one Warning %s %q", again.Name, evs, reclaim.EventReasonReturned, want)
	}
	if got := gauge(t, r.Metrics().Registry(), "sandboxipam_reclaimer_reclaimed_nodes_answering_total"); got != 1 {
		t.Fatalf("sandboxipam_reclaimer_reclaimed_nodes_answering_total = %v, want 1", got)
	}
	line := fmt.Sprintf(`level=ERROR msg="reclaimer: the ipamd of a node whose blocks were reclaimed as dead answers again: its old pods may hold addresses now handed out elsewhere until its kubelet kills them" node=ret-n1 nodeUID=%s`, n.UID)
	if !strings.Contains(logs.String(), line) || !strings.Contains(logs.String(), "blocks=\"198.18.12.0/26 (reclaimed 2m0s ago; node ret-n2 (UID "+string(n2.UID)+") holds it now)\"") {
		t.Fatalf("log:\n%s\nwant a line with %q", logs.String(), line)
	}

	// Reported once.
	clk.Step(time.Minute)
	if p := runOnce(t, r); len(p.Returned) != 0 || len(events(t, env, again)) != 1 {
		t.Fatalf("the pass after the report: %+v, want nothing reported again", p)
	}
}

// serveAlive answers as an ipamd's alive endpoint on addr (the address a
// stopped one had), with what answer returns, until the test ends.
func serveAlive(t *testing.T, addr string, answer func() ipamdlease.Alive) {
	t.Helper()
	srv, err := aliveness.Listen([]netip.AddrPort{netip.MustParseAddrPort(addr)}, answer, newLogger())
	if err != nil {
		t.Fatalf("listen again on %s: %v", addr, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { srv.Serve(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
}
