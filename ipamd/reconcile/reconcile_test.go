package reconcile_test

import (
	"context"
	"errors"
	"maps"
	"net/netip"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sandboxipam/sandboxipam/internal/testadapter"
	"github.com/sandboxipam/sandboxipam/ipamd/api/hostveth"
	"github.com/sandboxipam/sandboxipam/ipamd/datastore"
	"github.com/sandboxipam/sandboxipam/ipamd/hostlinks"
	"github.com/sandboxipam/sandboxipam/ipamd/reconcile"
	"github.com/sandboxipam/sandboxipam/ipamd/reconcile/reconcileconf"
	"github.com/sandboxipam/sandboxipam/runtime"
)

// pass runs one pass at the clock's time and fails the test on error.
func (n *node) pass(r *reconcile.Reconciler) reconcile.Result {
	n.t.Helper()
	res, err := r.RunOnce(context.Background(), false)
	if err != nil {
		n.t.Fatalf("RunOnce: %v (%+v)", err, res)
	}
	return res
}

func (n *node) reconciler() *reconcile.Reconciler {
	return reconcile.New(n.store, n.adapter, reconcile.Config{Network: "pods", Now: n.clock.Now, Logger: discard()})
}

func TestReleasesOnlySandboxesListedOnceAndNoLonger(t *testing.T) {
	n := newNode(t)
	n.assign("ready", "198.18.0.1")
	n.assign("stopped", "198.18.0.2")
	n.assign("gone", "198.18.0.3")
	n.assign("hostnet", "198.18.0.4")
	host := sandbox("hostnet", runtime.StateReady)
	host.HostNetwork = true
	n.setRuntime(testadapter.State{Sandboxes: []runtime.Sandbox{
		sandbox("ready", runtime.StateReady, "198.18.0.1"),
		sandbox("stopped", runtime.StateNotReady, "198.18.0.2"), // still owns its IP
		sandbox("gone", runtime.StateReady, "198.18.0.3"),
		host, // owns no pod IP: does not protect one
	}})
	n.clock.Set(t0.Add(time.Minute))
	r := n.reconciler()
	res := n.pass(r)
	if got := released(res.Released); !maps.Equal(got, map[string]string{"hostnet": "198.18.0.4"}) || res.Listed != 4 || res.Confirmed != 4 {
		t.Fatalf("first pass = %+v, released %v; want hostnet only, 4 confirmed", res, got)
	}
	n.setRuntime(testadapter.State{Sandboxes: []runtime.Sandbox{
		sandbox("ready", runtime.StateReady, "198.18.0.1"),
		sandbox("stopped", runtime.StateNotReady, "198.18.0.2"),
	}})
	n.clock.Set(t0.Add(2 * time.Minute))
	res = n.pass(r)
	if got := released(res.Released); !maps.Equal(got, map[string]string{"gone": "198.18.0.3"}) || res.Err != "" || res.DryRun {
		t.Fatalf("second pass = %+v, released %v; want gone", res, got)
	}
	if got := released(n.store.Assignments()); !maps.Equal(got, map[string]string{"ready": "198.18.0.1", "stopped": "198.18.0.2"}) {
		t.Fatalf("left %v", got)
	}
	if st := n.store.Stats(); st.Cooling != 1 {
		t.Fatalf("Stats = %+v: gone's address must cool down (hostnet's cooled already)", st)
	}
}

func TestGraceProtectsYoungAssignments(t *testing.T) {
	n := newNode(t)
	n.assign("old", "198.18.0.1")
	n.clock.Set(t0.Add(45 * time.Second))
	n.assign("young", "198.18.0.2")
	n.setRuntime(testadapter.State{Sandboxes: []runtime.Sandbox{sandbox("old", runtime.StateReady), sandbox("young", runtime.StateReady)}})
	r := n.reconciler()
	n.clock.Set(t0.Add(50 * time.Second))
	n.pass(r)
	n.clock.Set(t0.Add(time.Minute)) // old is 60s old, young 15s
	n.setRuntime(testadapter.State{Sandboxes: []runtime.Sandbox{}})
	res := n.pass(r)
	if got := released(res.Released); !maps.Equal(got, map[string]string{"old": "198.18.0.1"}) {
		t.Fatalf("released %v, want only old", got)
	}
	if _, ok := n.store.Lookup(datastore.Key{Network: "pods", SandboxID: "young", IfName: "eth0"}); !ok {
		t.Fatal("young assignment was released within its grace period")
	}
}

// The adapter must see what CNI sees: a sandbox that arrived by ADD and
// that no listing shows once the grace has passed means the adapter is
// blind or looks at another runtime, and nothing is released, not even
// sandboxes it once listed, until the missing one shows up.
func TestBlindAdapterReleasesNothing(t *testing.T) {
	n := newNode(t)
	n.assign("listed", "198.18.0.1")
	n.setRuntime(testadapter.State{Sandboxes: []runtime.Sandbox{sandbox("listed", runtime.StateReady)}})
	r := n.reconciler()
	n.pass(r)
	n.clock.Set(t0.Add(10 * time.Second))
	n.assign("c32c237fb5293478da938e388f6e22486790facba0d178ff24271829865976cf", "198.18.0.2")
	n.setRuntime(testadapter.State{Sandboxes: []runtime.Sandbox{}})
	// Within the grace the new sandbox may simply not be listed yet.
	n.clock.Set(t0.Add(20 * time.Second))
	if res := n.pass(r); res.Blind() || len(res.Released) != 0 {
		t.Fatalf("pass within the grace = %+v", res)
	}
	n.clock.Set(t0.Add(time.Hour))
	res, err := r.RunOnce(context.Background(), false)
	if !errors.Is(err, reconcile.ErrAdapterBlind) || len(res.Released) != 0 ||
		!slices.Equal(res.Missing, []string{"c32c237fb5293478da938e388f6e22486790facba0d178ff24271829865976cf"}) {
		t.Fatalf("RunOnce = %+v, %v; want ErrAdapterBlind naming the missing sandbox, nothing released", res, err)
	}
	if !strings.Contains(res.Err, "c32c237fb5293478da938e388f6e22486790facba0d178ff24271829865976cf") || len(n.store.Assignments()) != 2 {
		t.Fatalf("Err = %q, %d assignments left", res.Err, len(n.store.Assignments()))
	}
	// Once the adapter lists it, the pass is trusted again, and the sandbox
	// it listed once and no longer lists is released.
	n.setRuntime(testadapter.State{Sandboxes: []runtime.Sandbox{sandbox("c32c237fb5293478da938e388f6e22486790facba0d178ff24271829865976cf", runtime.StateReady)}})
	res = n.pass(r)
	if got := released(res.Released); res.Blind() || !maps.Equal(got, map[string]string{"listed": "198.18.0.1"}) {
		t.Fatalf("pass after the adapter recovered = %+v, released %v", res, got)
	}
}

func TestFailedListingReleasesNothing(t *testing.T) {
	cases := map[string]func(n *node){
		"unavailable":   func(n *node) { n.setRuntime(testadapter.State{Unavailable: true}) },
		"wrong runtime": func(n *node) { n.setRuntime(testadapter.State{WrongRuntime: true}) },
		"state missing": func(n *node) {
			if err := os.Remove(n.statePath); err != nil {
				t.Fatal(err)
			}
		},
		"hangs": func(n *node) { n.setRuntime(testadapter.State{Hang: true}) },
	}
	for name, breakRuntime := range cases {
		t.Run(name, func(t *testing.T) {
			n := newNode(t)
			n.assign("a", "198.18.0.1")
			breakRuntime(n)
			n.clock.Set(t0.Add(time.Hour))
			r := reconcile.New(n.store, n.adapter, reconcile.Config{
				Network: "pods", Now: n.clock.Now, Logger: discard(), ListTimeout: 50 * time.Millisecond,
			})
			res, err := r.RunOnce(context.Background(), false)
			if err == nil || res.Err == "" || len(res.Released) != 0 {
				t.Fatalf("RunOnce = %+v, %v; want an error and nothing released", res, err)
			}
			if name == "hangs" && !strings.Contains(res.Err, "timed out") {
				t.Fatalf("Err = %q, want it to say the listing timed out", res.Err)
			}
			if len(n.store.Assignments()) != 1 {
				t.Fatal("an assignment was released after a failed listing")
			}
			if last, ok := r.Last(); !ok || last.Err != res.Err {
				t.Fatalf("Last = %+v, %v", last, ok)
			}
		})
	}
}

func TestDryRunReleasesNothing(t *testing.T) {
	n := newNode(t)
	n.assign("gone", "198.18.0.1")
	n.setRuntime(testadapter.State{Sandboxes: []runtime.Sandbox{sandbox("gone", runtime.StateReady)}})
	r := n.reconciler()
	n.pass(r)
	n.setRuntime(testadapter.State{Sandboxes: []runtime.Sandbox{}})
	n.clock.Set(t0.Add(time.Hour))
	res, err := r.RunOnce(context.Background(), true)
	if err != nil {
		t.Fatal(err)
	}
	if got := released(res.Released); !res.DryRun || !maps.Equal(got, map[string]string{"gone": "198.18.0.1"}) {
		t.Fatalf("dry run = %+v", res)
	}
	if len(n.store.Assignments()) != 1 {
		t.Fatal("dry run released an assignment")
	}
}

// After a lost checkpoint the first pass adopts the runtime's sandboxes
// under their real sandbox IDs, so the next DEL matches: the seed bug's
// restart, done right.
func TestLostCheckpointIsRebuiltFromTheRuntime(t *testing.T) {
	n := newNode(t)
	n.assign("93e629d853d9f70464dd5b54987533ffe87930cb28a6414ddb48c94b69845e85", "198.18.0.1")
	n.assign("c32c237fb5293478da938e388f6e22486790facba0d178ff24271829865976cf", "198.18.0.2")
	if err := n.store.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(n.storePath, []byte("torn"), 0o600); err != nil {
		t.Fatal(err)
	}
	n.openStore()
	if !n.store.Unproven() {
		t.Fatal("store should be unproven")
	}
	host := sandbox("kube-proxy", runtime.StateReady)
	host.HostNetwork = true
	n.setRuntime(testadapter.State{Sandboxes: []runtime.Sandbox{
		sandbox("93e629d853d9f70464dd5b54987533ffe87930cb28a6414ddb48c94b69845e85", runtime.StateReady, "198.18.0.1"),
		sandbox("c32c237fb5293478da938e388f6e22486790facba0d178ff24271829865976cf", runtime.StateReady, "198.18.0.2"),
		host,
	}})
	var results []reconcile.Result
	r := reconcile.New(n.store, n.adapter, reconcile.Config{Network: "pods", Now: n.clock.Now, Logger: discard(),
		OnResult: func(res reconcile.Result) { results = append(results, res) }})
	res, err := r.RunOnce(context.Background(), false)
	if err != nil {
		t.Fatal(err)
	}
	if res.Adopted != 2 || len(res.Released) != 0 || n.store.Unproven() || len(results) != 1 {
		t.Fatalf("Result = %+v, unproven %v", res, n.store.Unproven())
	}
	// The real DEL for the deleted coredns pod now finds its IP.
	a, found, err := n.store.Release(context.Background(), datastore.Key{Network: "pods",
		SandboxID: "93e629d853d9f70464dd5b54987533ffe87930cb28a6414ddb48c94b69845e85", IfName: "eth0"})
	if err != nil || !found || a.Address.IP.String() != "198.18.0.1" {
		t.Fatalf("DEL after rebuild = %+v, %v, %v", a, found, err)
	}
	n.assign("new", "198.18.0.3")
}

func TestIncompleteListingKeepsTheStoreUnproven(t *testing.T) {
	n := newNode(t)
	if err := n.store.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(n.storePath, []byte("garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	n.openStore()
	n.setRuntime(testadapter.State{Sandboxes: []runtime.Sandbox{
		sandbox("a", runtime.StateReady, "198.18.0.1"),
		sandbox("no-ip-reported", runtime.StateNotReady),
	}})
	r := reconcile.New(n.store, n.adapter, reconcile.Config{Network: "pods", Now: n.clock.Now, Logger: discard()})
	res, err := r.RunOnce(context.Background(), false)
	if err != nil || res.Adopted != 1 || !n.store.Unproven() {
		t.Fatalf("Result = %+v, %v, unproven %v", res, err, n.store.Unproven())
	}
	if _, err := n.store.Assign(context.Background(), datastore.Key{Network: "pods", SandboxID: "x", IfName: "eth0"}, datastore.Pod{}); !errors.Is(err, datastore.ErrUnproven) {
		t.Fatalf("Assign = %v, want ErrUnproven", err)
	}
	// The stopped sandbox is removed; the next pass proves the pool.
	n.setRuntime(testadapter.State{Sandboxes: []runtime.Sandbox{sandbox("a", runtime.StateReady, "198.18.0.1")}})
	if _, err := r.RunOnce(context.Background(), false); err != nil || n.store.Unproven() {
		t.Fatalf("second pass: %v, unproven %v", err, n.store.Unproven())
	}
	n.assign("x", "198.18.0.2")
}

// A first start (no checkpoint) is unproven like a lost one: the runtime
// listing adopts what it reports, so a pod that survived a wiped state
// directory keeps its address, and proves the rest free.
func TestFirstStartIsProvenByTheRuntime(t *testing.T) {
	n := newNodeWith(t, true)
	if !n.store.Unproven() {
		t.Fatal("a store without a checkpoint must start unproven")
	}
	n.setRuntime(testadapter.State{Sandboxes: []runtime.Sandbox{sandbox("survivor", runtime.StateReady, "198.18.0.1")}})
	r := n.reconciler()
	if res := n.pass(r); res.Adopted != 1 || res.Unproven {
		t.Fatalf("Result = %+v", res)
	}
	n.assign("new", "198.18.0.2")
	if res := n.pass(r); res.Adopted != 0 {
		t.Fatalf("second pass adopted again: %+v", res)
	}
}

// fakeNode is the node's pod links as a test sets them; the netlink
// reader itself is tested against real links in ipamd/hostlinks.
type fakeNode map[string][]netip.Addr

func (f fakeNode) Read(context.Context) (hostlinks.Snapshot, error) {
	return hostlinks.Snapshot{Links: f}, nil
}

func (n *node) lose() {
	n.t.Helper()
	if err := n.store.Close(); err != nil {
		n.t.Fatal(err)
	}
	if err := os.WriteFile(n.storePath, []byte("garbage"), 0o600); err != nil {
		n.t.Fatal(err)
	}
	n.openStore()
}

func (n *node) reconcilerOnNode(links fakeNode) *reconcile.Reconciler {
	return reconcile.New(n.store, n.adapter, reconcile.Config{Network: "pods", Now: n.clock.Now, Logger: discard(), Node: links})
}

// wiredOnNode is reconcilerOnNode on a node where the plugin is known to
// wire every pod (podLinks.podWiring plugin): a missing pod link proves
// something.
func (n *node) wiredOnNode(links fakeNode) *reconcile.Reconciler {
	return reconcile.New(n.store, n.adapter, reconcile.Config{Network: "pods", Now: n.clock.Now, Logger: discard(), Node: links, PluginWiresEveryPod: true})
}

func veth(sandboxID string) string { return hostveth.Name(hostveth.DefaultPrefix, sandboxID, "eth0") }

// The first case: the state directory is lost and the runtime
// lists two running pods without IPs. Nothing on the node accounts for
// them, so nothing is handed out, and the refusal names them.
func TestRunningPodsWithoutAnyEvidenceKeepTheStoreUnproven(t *testing.T) {
	n := newNodeWith(t, true)
	n.setRuntime(testadapter.State{Sandboxes: []runtime.Sandbox{sandbox("web-1", runtime.StateReady), sandbox("web-2", runtime.StateReady)}})
	res := n.pass(n.reconcilerOnNode(fakeNode{}))
	if !res.Unproven || len(res.Unaccounted) != 2 || !strings.Contains(res.Unaccounted[0], "sandbox web-1") {
		t.Fatalf("Result = %+v; want unproven, web-1 and web-2 unaccounted", res)
	}
	_, err := n.store.Assign(context.Background(), datastore.Key{Network: "pods", SandboxID: "new", IfName: "eth0"}, datastore.Pod{})
	if !errors.Is(err, datastore.ErrUnproven) || !strings.Contains(err.Error(), "sandbox web-1") {
		t.Fatalf("Assign = %v; want ErrUnproven naming web-1", err)
	}
}

// The plugin wires a pod moments after ipamd answers its ADD, so a pod
// made before ipamd started whose link is still missing LinkGrace later
// holds nothing on this node (it waits for its ADD); one whose link
// appears meanwhile holds the address routed to it. A pod made after ipamd
// started holds nothing the store does not know.
func TestPodsWithoutLinksAreProvenEmptyAfterTheGrace(t *testing.T) {
	n := newNodeWith(t, true)
	young := sandbox("made-after-start", runtime.StateReady)
	young.CreatedAt = t0.Add(time.Second)
	n.setRuntime(testadapter.State{Sandboxes: []runtime.Sandbox{sandbox("web-1", runtime.StateReady), sandbox("web-2", runtime.StateReady), young}})
	links := fakeNode{}
	r := n.wiredOnNode(links)
	n.clock.Set(t0.Add(2 * time.Second))
	if res := n.pass(r); !res.Unproven || len(res.Unaccounted) != 2 {
		t.Fatalf("pass within the grace = %+v; want web-1 and web-2 unaccounted, the young pod not", res)
	}
	links[veth("web-2")] = []netip.Addr{netip.MustParseAddr("198.18.0.2")}
	n.clock.Set(t0.Add(reconcileconf.DefaultLinkGrace))
	res := n.pass(r)
	if res.Unproven || res.Adopted != 1 {
		t.Fatalf("pass after the grace = %+v; want proven, web-2 adopted from its link", res)
	}
	n.assign("new-1", "198.18.0.1")
	n.assign("new-2", "198.18.0.3")
}

// A pod the runtime reports no IP for (Docker records none) is accounted
// for by the host route through the veth the CNI plugin named after its
// sandbox; a stopped one without a link holds nothing on this node.
func TestPodLinksOnTheNodeProveThePool(t *testing.T) {
	n := newNode(t)
	n.lose()
	n.setRuntime(testadapter.State{Sandboxes: []runtime.Sandbox{
		sandbox("docker-pod", runtime.StateReady),
		sandbox("stopped", runtime.StateNotReady),
	}})
	res := n.pass(n.wiredOnNode(fakeNode{veth("docker-pod"): {netip.MustParseAddr("198.18.0.7")}}))
	if res.Unproven || res.Adopted != 1 {
		t.Fatalf("Result = %+v; want proven, docker-pod adopted", res)
	}
	if got := released(n.store.Assignments()); !maps.Equal(got, map[string]string{"docker-pod": "198.18.0.7"}) {
		t.Fatalf("assignments %v", got)
	}
	n.assign("new", "198.18.0.1")
}

// A pod link no listed sandbox owns means the adapter does not see a pod
// this node runs: its address is held, and nothing else is proven.
func TestAPodLinkNoListedSandboxOwnsKeepsTheStoreUnproven(t *testing.T) {
	n := newNodeWith(t, true)
	n.setRuntime(testadapter.State{Sandboxes: []runtime.Sandbox{}})
	res := n.pass(n.reconcilerOnNode(fakeNode{veth("unlisted"): {netip.MustParseAddr("198.18.0.9")}}))
	if !res.Unproven || len(res.Unaccounted) != 1 || !strings.Contains(res.Unaccounted[0], veth("unlisted")+" on the node routes 198.18.0.9") {
		t.Fatalf("Result = %+v; want unproven naming the link", res)
	}
	if st := n.store.Stats(); st.Free != 0 {
		t.Fatalf("Stats = %+v: nothing may be free", st)
	}
}

// A sandbox the listing lost but whose link is still on the node is alive:
// its address is not released.
func TestAPodLinkOnTheNodeKeepsItsAssignment(t *testing.T) {
	n := newNode(t)
	n.assign("alive", "198.18.0.1")
	n.setRuntime(testadapter.State{Sandboxes: []runtime.Sandbox{sandbox("alive", runtime.StateReady)}})
	links := fakeNode{veth("alive"): {netip.MustParseAddr("198.18.0.1")}}
	r := n.reconcilerOnNode(links)
	n.pass(r)
	n.setRuntime(testadapter.State{Sandboxes: []runtime.Sandbox{}})
	n.clock.Set(t0.Add(time.Hour))
	if res := n.pass(r); len(res.Released) != 0 {
		t.Fatalf("released %v while its pod link is on the node", released(res.Released))
	}
	delete(links, veth("alive"))
	if res := n.pass(r); !maps.Equal(released(res.Released), map[string]string{"alive": "198.18.0.1"}) {
		t.Fatalf("Result = %+v; want alive released once its link is gone", res)
	}
}
