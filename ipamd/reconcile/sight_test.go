package reconcile_test

import (
	"context"
	"errors"
	"maps"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sandboxipam/sandboxipam/internal/testadapter"
	"github.com/sandboxipam/sandboxipam/ipamd/datastore"
	"github.com/sandboxipam/sandboxipam/ipamd/reconcile"
	"github.com/sandboxipam/sandboxipam/runtime"
)

// assignWired is an ADD from the plugin running as wiring says.
func (n *node) assignWired(sandbox, want string, wiring datastore.Wiring) {
	n.t.Helper()
	a, err := n.store.AssignWired(context.Background(), datastore.Key{Network: "pods", SandboxID: sandbox, IfName: "eth0"},
		datastore.Pod{Name: "pod-" + sandbox, Namespace: "default", UID: "uid-" + sandbox}, wiring)
	if err != nil || a.Address.IP.String() != want {
		n.t.Fatalf("assign %s = %v, %v; want %s", sandbox, a.Address.IP, err, want)
	}
}

// seeingNode is a node whose reconciler started at t0 and whose adapter
// has shown it sees what CNI sees: a listing at t0+2s showed "proof",
// ADDed at t0+1s. "proof" holds 198.18.0.1.
func seeingNode(t *testing.T, links fakeNode) (*node, *reconcile.Reconciler) {
	n := newNode(t)
	r := n.reconcilerOnNode(links)
	n.clock.Set(t0.Add(time.Second))
	n.assignWired("proof", "198.18.0.1", datastore.WiringMainPlugin)
	n.setRuntime(testadapter.State{Sandboxes: []runtime.Sandbox{sandbox("proof", runtime.StateReady)}})
	n.clock.Set(t0.Add(2 * time.Second))
	n.pass(r)
	if sees, proof := r.Sees(); !sees || proof != "proof" {
		t.Fatalf("Sees() = %v, %q after a listing showed a sandbox ADDed since start", sees, proof)
	}
	return n, r
}

// The second case: pods that lived and died between two listings
// and lost their DEL never appear in a listing. An adapter that has shown
// it sees CNI's sandboxes is not blind because of them: each is released
// once GetSandbox says it is gone, IPAM-only pods included, and so is a
// sandbox listed once and no longer.
func TestSeeingAdapterReleasesSandboxesNoListingShowed(t *testing.T) {
	n, r := seeingNode(t, fakeNode{})
	n.assignWired("short-ipam", "198.18.0.2", datastore.WiringIPAMOnly)
	n.assignWired("short-main", "198.18.0.3", datastore.WiringMainPlugin)
	n.assign("short-old-plugin", "198.18.0.4")
	n.setRuntime(testadapter.State{Sandboxes: []runtime.Sandbox{}}) // all gone, "proof" too, no DEL
	n.clock.Set(t0.Add(time.Hour))
	res := n.pass(r)
	want := map[string]string{"proof": "198.18.0.1", "short-ipam": "198.18.0.2", "short-main": "198.18.0.3", "short-old-plugin": "198.18.0.4"}
	if got := released(res.Released); res.Blind() || !maps.Equal(got, want) {
		t.Fatalf("pass = %+v, released %v; want %v", res, got, want)
	}
	if st := n.store.Stats(); st.Assigned != 0 {
		t.Fatalf("Stats %+v: leaked", st)
	}
}

// Within the grace, a never-listed sandbox is kept: its listing may come.
func TestSeeingAdapterKeepsNeverListedSandboxesWithinTheGrace(t *testing.T) {
	n, r := seeingNode(t, fakeNode{})
	n.assignWired("young", "198.18.0.2", datastore.WiringIPAMOnly)
	n.clock.Set(t0.Add(10 * time.Second))
	if res := n.pass(r); res.Blind() || len(res.Released) != 0 {
		t.Fatalf("pass within the grace = %+v", res)
	}
}

// An adapter that misses a sandbox whose pod link is on the node is blind
// after all: nothing is released, and it must show its sight again.
func TestSeeingAdapterIsBlindWhenAMissingSandboxHasItsPodLink(t *testing.T) {
	links := fakeNode{}
	n, r := seeingNode(t, links)
	n.assignWired("linked", "198.18.0.2", datastore.WiringMainPlugin)
	links[veth("linked")] = []netip.Addr{netip.MustParseAddr("198.18.0.2")}
	n.setRuntime(testadapter.State{Sandboxes: []runtime.Sandbox{}})
	n.clock.Set(t0.Add(time.Hour))
	res, err := r.RunOnce(context.Background(), false)
	if !errors.Is(err, reconcile.ErrAdapterBlind) || len(res.Released) != 0 || !slices.Equal(res.Missing, []string{"linked"}) ||
		!strings.Contains(res.Err, "sandbox linked, whose pod link is on the node") {
		t.Fatalf("RunOnce = %+v, %v; want blind naming linked, nothing released (not even proof)", res, err)
	}
	if sees, _ := r.Sees(); sees {
		t.Fatal("the adapter still counts as seeing after missing a linked sandbox")
	}
}

// listFilter is an adapter whose listing leaves out some sandboxes that
// GetSandbox still finds: a stale or partial listing.
type listFilter struct {
	runtime.RuntimeAdapter
	hide string
}

func (l listFilter) ListSandboxes(ctx context.Context) ([]runtime.Sandbox, error) {
	sbs, err := l.RuntimeAdapter.ListSandboxes(ctx)
	return slices.DeleteFunc(sbs, func(sb runtime.Sandbox) bool { return sb.ID == l.hide }), err
}

// A listing that leaves out a sandbox GetSandbox finds is not trusted.
func TestSeeingAdapterIsBlindWhenGetSandboxFindsWhatItsListingLeftOut(t *testing.T) {
	n, _ := seeingNode(t, fakeNode{})
	r := reconcile.New(n.store, listFilter{RuntimeAdapter: n.adapter, hide: "hidden"},
		reconcile.Config{Network: "pods", Now: n.clock.Now, Logger: discard(), Node: fakeNode{}, StartedAt: t0})
	n.clock.Set(t0.Add(3 * time.Second))
	n.assignWired("seen", "198.18.0.2", datastore.WiringMainPlugin)
	n.assignWired("hidden", "198.18.0.3", datastore.WiringIPAMOnly)
	n.setRuntime(testadapter.State{Sandboxes: []runtime.Sandbox{sandbox("seen", runtime.StateReady), sandbox("hidden", runtime.StateReady)}})
	n.clock.Set(t0.Add(time.Hour))
	res, err := r.RunOnce(context.Background(), false)
	if !errors.Is(err, reconcile.ErrAdapterBlind) || len(res.Released) != 0 || !strings.Contains(res.Err, "leaves out sandbox hidden, which GetSandbox finds") {
		t.Fatalf("RunOnce = %+v, %v; want blind naming hidden, nothing released (not even proof)", res, err)
	}
}

// The adapter of the wrong runtime (Docker's own containerd, a containerd
// without CRI answering an empty list): it lists no sandbox CNI added,
// and its GetSandbox says ErrNotFound for every one. It has never shown
// it sees CNI's pods, so nothing is released: neither the never-listed
// sandboxes nor the ones a listing once showed.
func TestWrongRuntimeAdapterReleasesNothingThoughGetSandboxSaysGone(t *testing.T) {
	n := newNode(t)
	r := n.reconcilerOnNode(fakeNode{})
	n.clock.Set(t0.Add(time.Second))
	for i, id := range []string{"pod-a", "pod-b", "pod-c"} {
		n.assignWired(id, netip.AddrFrom4([4]byte{198, 18, 0, byte(i + 1)}).String(), datastore.WiringMainPlugin)
	}
	n.setRuntime(testadapter.State{RuntimeName: "containerd", Sandboxes: []runtime.Sandbox{}})
	for _, at := range []time.Duration{time.Minute, time.Hour, 24 * time.Hour} {
		n.clock.Set(t0.Add(at))
		res, err := r.RunOnce(context.Background(), false)
		if !errors.Is(err, reconcile.ErrAdapterBlind) || len(res.Released) != 0 ||
			!slices.Equal(res.Missing, []string{"pod-a", "pod-b", "pod-c"}) || !strings.Contains(res.Err, "none of its listings has shown a sandbox CNI added") {
			t.Fatalf("pass at +%s = %+v, %v; want blind, pod-a..c missing, nothing released", at, res, err)
		}
	}
	if _, err := n.adapter.GetSandbox(context.Background(), "pod-a"); !errors.Is(err, runtime.ErrNotFound) {
		t.Fatalf("GetSandbox(pod-a) = %v; the test needs the wrong runtime to say ErrNotFound", err)
	}
	if st := n.store.Stats(); st.Assigned != 3 {
		t.Fatalf("Stats %+v; want all 3 kept", st)
	}
}

// A node whose pool leaks filled before a restart has no address for a
// new ADD: a live pod CNI added before the restart, listed now, shows the
// adapter sees what CNI sees, and the leaks are released. A sandbox the
// store adopted from the runtime shows nothing.
func TestSightFromAPodAddedBeforeTheRestart(t *testing.T) {
	n := newNode(t)
	n.clock.Set(t0.Add(time.Second))
	n.assignWired("live", "198.18.0.1", datastore.WiringMainPlugin)
	n.assignWired("leak", "198.18.0.2", datastore.WiringIPAMOnly)
	n.clock.Set(t0.Add(time.Hour))
	r := n.reconcilerOnNode(fakeNode{}) // ipamd restarted: it starts now
	n.setRuntime(testadapter.State{Sandboxes: []runtime.Sandbox{sandbox("live", runtime.StateReady)}})
	n.clock.Set(t0.Add(2 * time.Hour))
	res := n.pass(r)
	if got := released(res.Released); res.Blind() || !maps.Equal(got, map[string]string{"leak": "198.18.0.2"}) {
		t.Fatalf("pass = %+v, released %v; want leak released", res, got)
	}
	if sees, proof := r.Sees(); !sees || proof != "live" {
		t.Fatalf("Sees() = %v, %q; want shown by live", sees, proof)
	}
}

func TestAnAdoptedSandboxShowsNoSight(t *testing.T) {
	n := newNodeWith(t, true)
	n.setRuntime(testadapter.State{Sandboxes: []runtime.Sandbox{sandbox("adopted", runtime.StateReady, "198.18.0.7")}})
	r := n.reconcilerOnNode(fakeNode{})
	if res := n.pass(r); res.Unproven || res.Adopted != 1 {
		t.Fatalf("pass = %+v; want adopted", res)
	}
	n.clock.Set(t0.Add(time.Minute))
	n.pass(r)
	if sees, proof := r.Sees(); sees {
		t.Fatalf("Sees() = true (%s) from an adopted sandbox", proof)
	}
}
