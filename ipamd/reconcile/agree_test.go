package reconcile_test

import (
	"context"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/sandboxipam/sandboxipam/internal/testadapter"
	"github.com/sandboxipam/sandboxipam/ipamd/api/hostveth"
	"github.com/sandboxipam/sandboxipam/ipamd/datastore"
	"github.com/sandboxipam/sandboxipam/ipamd/hostlinks"
	"github.com/sandboxipam/sandboxipam/ipamd/nodecheck"
	"github.com/sandboxipam/sandboxipam/runtime"
)

// The reconciler (with the datastore's proof) and ipamctl check read the
// node through one join.Join: what the pass quarantines, the check
// reports, and what the check passes, the pass leaves alone.
func TestCheckReportsExactlyWhatThePassQuarantines(t *testing.T) {
	n := newNode(t)
	n.assign("a", "198.18.0.1")
	n.assign("b", "198.18.0.2")
	sandboxes := []runtime.Sandbox{sandbox("a", runtime.StateReady, "198.18.0.1"), sandbox("b", runtime.StateReady, "198.18.0.2"),
		sandbox("old", runtime.StateNotReady, "198.18.0.2")} // a stopped sandbox whose DEL never came
	n.setRuntime(testadapter.State{Sandboxes: sandboxes})
	links := fakeNode{veth("a"): {netip.MustParseAddr("198.18.0.1"), netip.MustParseAddr("198.18.0.9")}, // .9: a route the runtime does not report
		veth("b"):     {netip.MustParseAddr("198.18.0.2")},
		veth("stray"): {netip.MustParseAddr("198.18.0.5")}} // a link no sandbox and no assignment owns
	r := n.reconcilerOnNode(links)
	n.clock.Set(t0.Add(time.Minute))
	if res := n.pass(r); res.Conflicts != 3 || res.Quarantined != 3 {
		t.Fatalf("pass = %+v; want 198.18.0.2, 198.18.0.5 and 198.18.0.9 quarantined", res)
	}
	want := []string{"two-holders 198.18.0.2 ", "route-unheld 198.18.0.5 ", "route-unheld 198.18.0.9 a"}
	if got := checkNode(n, sandboxes, links); !slices.Equal(got, want) {
		t.Fatalf("check = %q; want %q", got, want)
	}

	// old's DEL comes, the stray link and a's extra route go: the next
	// pass lifts the three quarantines, and the check finds nothing.
	if _, _, err := n.store.Release(context.Background(), datastore.Key{Network: "pods", SandboxID: "old", IfName: "eth0"}); err != nil {
		t.Fatal(err)
	}
	delete(links, veth("stray"))
	links[veth("a")] = links[veth("a")][:1]
	if res := n.pass(r); res.Conflicts != 0 || res.Quarantined != 0 {
		t.Fatalf("pass after old's DEL = %+v; want no quarantine", res)
	}
	if got := checkNode(n, sandboxes, links); len(got) != 0 {
		t.Fatalf("check after old's DEL = %q; want nothing", got)
	}
	n.assign("c", "198.18.0.3") // 198.18.0.5 was never handed out; .3 is next
}

func checkNode(n *node, sandboxes []runtime.Sandbox, links fakeNode) []string {
	out := nodecheck.Run(context.Background(), nodecheck.Sources{
		Assignments: n.store.Assignments, Deleted: n.store.DeletedSandboxes,
		Sandboxes:  func(context.Context) ([]runtime.Sandbox, error) { return sandboxes, nil },
		Node:       func(context.Context) (hostlinks.Snapshot, error) { return hostlinks.Snapshot{Links: links}, nil },
		VethPrefix: hostveth.DefaultPrefix, Now: n.clock.Now, Settle: time.Second,
	})
	var got []string
	for _, d := range out.Disagreements {
		got = append(got, string(d.Kind)+" "+d.Address+" "+d.SandboxID)
	}
	return got
}
