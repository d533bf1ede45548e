package reconcile_test

import (
	"context"
	"errors"
	"io/fs"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sandboxipam/sandboxipam/internal/testadapter"
	"github.com/sandboxipam/sandboxipam/internal/testsupport"
	"github.com/sandboxipam/sandboxipam/ipamd/datastore"
	"github.com/sandboxipam/sandboxipam/ipamd/hostlinks"
	"github.com/sandboxipam/sandboxipam/ipamd/reconcile"
	"github.com/sandboxipam/sandboxipam/runtime"
)

// nsNode is seeingNode whose reconciler looks at network namespaces:
// "proof" (198.18.0.1) is listed and showed the adapter's sight.
func nsNode(t *testing.T) (*node, *reconcile.Reconciler) {
	testsupport.RequireRoot(t, "unshare", "umount")
	n := newNode(t)
	r := reconcile.New(n.store, n.adapter, reconcile.Config{Network: "pods", Now: n.clock.Now, Logger: discard(),
		Node: fakeNode{}, StartedAt: t0, NetNSIdentity: hostlinks.NetNSIdentity})
	n.clock.Set(t0.Add(time.Second))
	n.assignWired("proof", "198.18.0.1", datastore.WiringMainPlugin)
	n.setRuntime(testadapter.State{Sandboxes: []runtime.Sandbox{sandbox("proof", runtime.StateReady)}})
	n.clock.Set(t0.Add(2 * time.Second))
	n.pass(r)
	if sees, _ := r.Sees(); !sees {
		t.Fatal("the adapter has not shown its sight")
	}
	return n, r
}

// assignInNS is an ADD from the plugin running as IPAM only (no pod link)
// for a pod in the namespace at path, identified as ipamd does at ADD by
// the namespace at identity ("" leaves it unidentified).
func (n *node) assignInNS(sandbox, want, path, identity string) {
	n.t.Helper()
	ns := datastore.NetNS{Path: path}
	if identity != "" {
		var err error
		if ns.Dev, ns.Ino, err = hostlinks.NetNSIdentity(identity); err != nil {
			n.t.Fatal(err)
		}
	}
	a, err := n.store.AssignFrom(context.Background(), datastore.Key{Network: "pods", SandboxID: sandbox, IfName: "eth0"},
		datastore.Pod{Name: "pod-" + sandbox, Namespace: "default"}, datastore.Origin{Wiring: datastore.WiringIPAMOnly, NetNS: ns})
	if err != nil || a.Address.IP.String() != want || a.NetNS != ns {
		n.t.Fatalf("assign %s = %v %+v, %v; want %s in %+v", sandbox, a.Address.IP, a.NetNS, err, want, ns)
	}
}

// An IPAM-only pod has no pod link; its network namespace is the trace it
// leaves. A sandbox CNI added that no listing shows while the namespace
// its ADD named is still on the node makes the adapter blind: nothing is
// released, though GetSandbox says it is gone, and the error names the
// sandbox and the path. Once the namespace is gone, the next pass
// releases it (GetSandbox: not found), and the never-listed sandbox held
// back with it.
func TestMissingSandboxWhoseNetNSIsOnTheNodeMakesTheAdapterBlind(t *testing.T) {
	n, r := nsNode(t)
	path := filepath.Join(t.TempDir(), "cni-3f1c")
	remove := testsupport.NetNS(t, path)
	n.clock.Set(t0.Add(3 * time.Second))
	n.assignInNS("ipam-in-ns", "198.18.0.2", path, path)
	n.assignWired("short", "198.18.0.3", datastore.WiringIPAMOnly)
	// Both vanish from the runtime before any listing shows them; proof
	// is still listed.
	n.clock.Set(t0.Add(time.Hour))
	if _, err := n.adapter.GetSandbox(context.Background(), "ipam-in-ns"); !errors.Is(err, runtime.ErrNotFound) {
		t.Fatalf("GetSandbox(ipam-in-ns) = %v; the test needs ErrNotFound", err)
	}
	for range 2 {
		res, err := r.RunOnce(context.Background(), false)
		if !errors.Is(err, reconcile.ErrAdapterBlind) || len(res.Released) != 0 || !slices.Equal(res.Missing, []string{"ipam-in-ns", "short"}) ||
			!strings.Contains(res.Err, "it does not list sandbox ipam-in-ns, and its network namespace "+path+" is on the node") {
			t.Fatalf("RunOnce = %+v, %v; want blind naming ipam-in-ns and %s, nothing released", res, err, path)
		}
	}
	if st := n.store.Stats(); st.Assigned != 3 {
		t.Fatalf("Stats %+v; want all 3 kept while blind", st)
	}
	remove()
	n.clock.Set(t0.Add(2 * time.Hour))
	res := n.pass(r)
	if got := released(res.Released); res.Blind() || !maps.Equal(got, map[string]string{"ipam-in-ns": "198.18.0.2", "short": "198.18.0.3"}) {
		t.Fatalf("pass after the namespace went = %+v, released %v; want ipam-in-ns and short", res, got)
	}
}

// The namespace counts only when it is the pod's: another namespace at
// the path the ADD named (a /proc/PID/ns/net of a reused PID) is not a
// trace of the pod. Here the ADD saw namespace "then" at the path and
// "now" is there; "then" stays alive so the kernel cannot give "now" its
// inode. One never identified (ipamd could not open it at ADD) that is on
// the node now is taken as the pod's: fail shut.
func TestNetNSCountsOnlyWithTheIdentityRecordedAtADD(t *testing.T) {
	n, r := nsNode(t)
	dir := t.TempDir()
	then, now, unidentified := filepath.Join(dir, "then"), filepath.Join(dir, "now"), filepath.Join(dir, "unidentified")
	testsupport.NetNS(t, then)
	testsupport.NetNS(t, now)
	n.clock.Set(t0.Add(3 * time.Second))
	n.assignInNS("reused-pid", "198.18.0.2", now, then)
	n.assignInNS("unidentified", "198.18.0.3", unidentified, "")
	testsupport.NetNS(t, unidentified)
	n.clock.Set(t0.Add(time.Hour))
	res, err := r.RunOnce(context.Background(), false)
	if !errors.Is(err, reconcile.ErrAdapterBlind) || len(res.Released) != 0 ||
		!strings.Contains(res.Err, "sandbox unidentified, and its network namespace "+unidentified+" is on the node") {
		t.Fatalf("RunOnce = %+v, %v; want blind naming unidentified only", res, err)
	}
}

// A sandbox a listing showed once and no longer does is released past
// the grace only when the node has no trace of it: its network namespace
// on the node keeps its address (the pass is not blind: the listing did
// show it), until the namespace goes.
func TestStaleSandboxKeptWhileItsNetNSIsOnTheNode(t *testing.T) {
	n, r := nsNode(t)
	path := filepath.Join(t.TempDir(), "cni-9a7e")
	remove := testsupport.NetNS(t, path)
	n.clock.Set(t0.Add(3 * time.Second))
	n.assignInNS("listed-once", "198.18.0.2", path, path)
	n.setRuntime(testadapter.State{Sandboxes: []runtime.Sandbox{sandbox("proof", runtime.StateReady), sandbox("listed-once", runtime.StateReady)}})
	n.clock.Set(t0.Add(4 * time.Second))
	n.pass(r)
	n.setRuntime(testadapter.State{Sandboxes: []runtime.Sandbox{sandbox("proof", runtime.StateReady)}})
	n.clock.Set(t0.Add(time.Hour))
	res := n.pass(r)
	if len(res.Released) != 0 || len(res.Unlisted) != 1 || res.Unlisted[0].SandboxID != "listed-once" {
		t.Fatalf("pass with the namespace on the node = %+v; want listed-once kept and unlisted", res)
	}
	remove()
	res = n.pass(r)
	if got := released(res.Released); !maps.Equal(got, map[string]string{"listed-once": "198.18.0.2"}) {
		t.Fatalf("pass after the namespace went released %v; want listed-once", got)
	}
}

// What each answer of the namespace lookup means: only a namespace that
// is there (the same one, when identified) or, identified at ADD, one
// that cannot be looked at now, counts; absence never does.
func TestNetNSOnNode(t *testing.T) {
	const path = "/run/netns/cni-1"
	answer := func(dev, ino uint64, err error) func(string) (uint64, uint64, error) {
		return func(string) (uint64, uint64, error) { return dev, ino, err }
	}
	identified, bare := datastore.NetNS{Path: path, Dev: 4, Ino: 4026532173}, datastore.NetNS{Path: path}
	for _, c := range []struct {
		name     string
		identify func(string) (uint64, uint64, error)
		ns       datastore.NetNS
		want     string
	}{
		{"same namespace", answer(4, 4026532173, nil), identified, "its network namespace " + path + " is on the node"},
		{"another namespace", answer(4, 4026532999, nil), identified, ""},
		{"unidentified, there", answer(4, 4026532999, nil), bare, "its network namespace " + path + " is on the node"},
		{"absent", answer(0, 0, fs.ErrNotExist), identified, ""},
		{"not a namespace", answer(0, 0, hostlinks.ErrNotNetNS), identified, ""},
		{"identified, unreadable now", answer(0, 0, fs.ErrPermission), identified,
			"its network namespace " + path + ", seen at ADD, cannot be checked now (permission denied)"},
		{"never identified, unreadable", answer(0, 0, fs.ErrPermission), bare, ""},
		{"no path", answer(4, 4026532173, nil), datastore.NetNS{}, ""},
		{"not looked at", nil, identified, ""},
	} {
		on, why := reconcile.NetNSOnNode(c.identify, c.ns)
		if on != (c.want != "") || why != c.want {
			t.Errorf("%s: NetNSOnNode = %v, %q; want %q", c.name, on, why, c.want)
		}
	}
}
