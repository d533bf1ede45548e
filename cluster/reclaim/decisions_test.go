package reclaim_test

import (
	"encoding/json"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/sandboxipam/sandboxipam/cluster/reclaim"
	"github.com/sandboxipam/sandboxipam/internal/testsupport"
)

// A dead node's block that pods still hold addresses in is kept, and the
// decisions endpoint says so with the evidence it has and the very pods
// that keep it; once they are gone the block is reclaimed and leaves the
// decisions. Before its first pass the endpoint serves no pass.
func TestDecisionsNameThePodsThatKeepADeadNodesBlock(t *testing.T) {
	env := apiServer(t)
	clk := clocktesting.NewFakeClock(t0)
	r := newReclaimer(t, env, testConfig(5*time.Minute), "reclaimer-dec", clk, &testsupport.Buffer{}, nil)
	if got := decisions(t, r); got.Identity != "reclaimer-dec" || got.Pass != nil {
		t.Fatalf("before any pass: %+v", got)
	}
	if err := r.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	n := env.Node(t, "dec-n1")
	b := confirmGone(t, env, env.Block(t, "default", "198.18.7.0/26", "dec-n1", n.UID))
	env.Pod(t, "decisions", "web-2", "dec-n1", "198.18.7.9")
	env.Pod(t, "decisions", "web-1", "dec-n1", "198.18.7.5")
	env.Pod(t, "decisions", "elsewhere", "dec-n1", "198.18.8.5")
	env.DeleteNode(t, "dec-n1")
	waitPass(t, r, "dec-n1 seen deleted, its absent Lease watched from now", func(p reclaim.Pass) bool {
		v, ok := p.Verdict(b.Name)
		return ok && v.Keep == "Lease kube-node-lease/dec-n1 absent, but only for 0s in the reclaimer's sight, not longer than the grace 5m0s"
	})
	clk.Step(5*time.Minute + time.Second)
	p := runOnce(t, r)
	got := decisions(t, r)
	if got.Pass == nil || !got.Pass.At.Equal(p.At) {
		t.Fatalf("decisions %+v, want the last pass at %s", got, p.At)
	}
	want := reclaim.Decision{Block: b.Name, CIDR: "198.18.7.0/26", Node: "dec-n1", NodeGone: true, LeaseExpired: true, IpamdStopped: true, NodeDead: true,
		Pods:    []string{"decisions/web-1 198.18.7.5", "decisions/web-2 198.18.7.9"},
		Verdict: reclaim.Verdict{Keep: "pods still hold addresses in 198.18.7.0/26: decisions/web-1 198.18.7.5, decisions/web-2 198.18.7.9"}}
	if d := decisionOf(got.Pass, b.Name); d == nil || !equalDecision(*d, want) {
		t.Fatalf("decision on %s: %+v, want %+v", b.Name, d, want)
	}

	env.DeletePod(t, "decisions", "web-1")
	env.DeletePod(t, "decisions", "web-2")
	p = waitPass(t, r, "the block reclaimed once its pods are gone", func(p reclaim.Pass) bool { return len(p.Reclaimed) > 0 || len(p.Errors) > 0 })
	if !slices.Equal(p.Reclaimed, []string{b.Name}) || len(p.Errors) != 0 {
		t.Fatalf("after the pods went: %+v", p)
	}
	waitPass(t, r, "the reclaimed block gone from the decisions", func(p reclaim.Pass) bool {
		_, ok := p.Verdict(b.Name)
		return !ok
	})
	if d := decisionOf(decisions(t, r).Pass, b.Name); d != nil {
		t.Fatalf("decisions still judge the reclaimed block: %+v", d)
	}
}

func decisions(t *testing.T, r *reclaim.Reclaimer) reclaim.Decisions {
	t.Helper()
	rec := httptest.NewRecorder()
	r.DecisionsHandler().ServeHTTP(rec, httptest.NewRequest("GET", reclaim.PathDecisions, nil))
	var d reclaim.Decisions
	if rec.Code != 200 || rec.Header().Get("Content-Type") != "application/json" {
		t.Fatalf("GET %s: %d %q", reclaim.PathDecisions, rec.Code, rec.Header().Get("Content-Type"))
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &d); err != nil {
		t.Fatalf("GET %s: %v: %s", reclaim.PathDecisions, err, rec.Body)
	}
	return d
}

func decisionOf(p *reclaim.Pass, block string) *reclaim.Decision {
	if p == nil {
		return nil
	}
	for i := range p.Decisions {
		if p.Decisions[i].Block == block {
			return &p.Decisions[i]
		}
	}
	return nil
}

func equalDecision(a, b reclaim.Decision) bool {
	return a.Block == b.Block && a.CIDR == b.CIDR && a.Node == b.Node && a.NodeGone == b.NodeGone && a.LeaseExpired == b.LeaseExpired && a.IpamdStopped == b.IpamdStopped && a.NodeDead == b.NodeDead &&
		slices.Equal(a.Pods, b.Pods) && a.Reclaim == b.Reclaim && a.Keep == b.Keep && slices.Equal(a.Evidence, b.Evidence)
}
