package daemon_test

import (
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sandboxipam/sandboxipam/internal/testadapter"
	"github.com/sandboxipam/sandboxipam/ipamd/api/wire"
	"github.com/sandboxipam/sandboxipam/ipamd/config"
	"github.com/sandboxipam/sandboxipam/ipamd/introspect/client"
	"github.com/sandboxipam/sandboxipam/runtime"
)

// The second case, with exact IDs and addresses, through the real
// ipamd and plugin: pods that lived between two listings and lost their
// DEL (18, half of them IPAM-only), and pods a listing showed once that
// went without a DEL (10), fill a 30-address pool beside 2 live pods, and
// ipamd is SIGKILLed. After the restart, an adapter looking at another
// runtime (Docker's own containerd: it lists no pod, successfully)
// releases nothing, however long it runs. The right adapter lists the two
// live pods, which CNI added: it sees what CNI sees, and its first pass
// releases all 28, the never-listed ones once GetSandbox says they are
// gone. The next ADD gets 198.18.0.3: 0 doubled, 0 leaked, the pool no
// longer exhausted.
func TestChurnWithLostDELsEndsWithNothingLeaked(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real ipamd and CNI plugin; skipped with -short")
	}
	n := newNode(t, "198.18.0.0/27")
	n.cfg.PodLinks.PodWiring = config.PodWiringAuto
	port := n.reserveIntrospection()
	bin, cfgPath, logPath := buildIpamd(t), n.writeConfig(), filepath.Join(n.dir, "ipamd.log")
	cni, intro := cniClient{socket: n.cfg.Socket}, client.NewAdmin(n.cfg.AdminSocketPath())
	plugin := newIPAMOnlyPlugin(t, n.cfg.Socket)
	p := startOnPort(t, port, bin, cfgPath, logPath, cni, intro)

	want := map[string]string{} // every leak, sandbox -> address
	addr := func(i int) string { return fmt.Sprintf("198.18.0.%d/27", i) }
	add := func(id string, i int, ipamOnly bool) {
		t.Helper()
		n.addSandbox(id)
		var got string
		var err error
		if ipamOnly {
			got, err = plugin.add(t.Context(), id)
		} else {
			got, err = cni.add(t.Context(), id)
		}
		if err != nil || got != addr(i) {
			t.Fatalf("ADD %s = %q, %v; want %s", id, got, err, addr(i))
		}
	}
	add("live-1", 1, false)
	n.setSandboxIP("live-1", "198.18.0.1")
	add("live-2", 2, true)
	for i := 3; i <= 12; i++ {
		add(fmt.Sprintf("listed-%02d", i), i, i%2 == 0)
	}
	if _, err := intro.Reconcile(t.Context(), false); err != nil {
		t.Fatalf("reconcile while the listed pods run: %v", err)
	}
	for i := 3; i <= 30; i++ {
		id := fmt.Sprintf("listed-%02d", i)
		if i > 12 {
			id = fmt.Sprintf("short-%02d", i)
			add(id, i, i%2 == 0)
		}
		n.removeSandbox(id) // gone, its DEL lost
		want[id] = addr(i)
	}
	n.addSandbox("new-1")
	if _, err := cni.add(t.Context(), "new-1"); !isExhausted(err) {
		t.Fatalf("ADD with 30 of 30 held = %v; want the pool exhausted", err)
	}
	p.kill()

	// The wrong runtime answers: no pod at all.
	real := n.snapshotState()
	n.writeRaw(testadapter.State{RuntimeName: "containerd", RuntimeVersion: "1.6", Sandboxes: []runtime.Sandbox{}})
	port.Release()
	p = startBinary(t, bin, cfgPath, logPath, cni, intro, true)
	p.port = port
	for range 3 {
		res, err := intro.Reconcile(t.Context(), false)
		if err == nil || len(res.Released) != 0 || len(res.Missing) != 18 || !strings.Contains(res.Error, "none of its listings has shown a sandbox CNI added") {
			t.Fatalf("pass through the wrong runtime = %+v, %v; want blind, 18 missing, nothing released", res, err)
		}
	}
	if pool := mustPool(t, intro); pool.Assigned != 30 {
		t.Fatalf("pool %+v: the wrong runtime's adapter released something", pool)
	}

	// The right runtime again (its adapter relaunched on it).
	n.writeRaw(real)
	res, err := intro.Reconcile(t.Context(), false)
	if err != nil || res.Unproven || len(res.Missing) != 0 {
		t.Fatalf("pass through the right runtime = %+v, %v", res, err)
	}
	got := map[string]string{}
	for _, pod := range res.Released {
		got[pod.SandboxID] = pod.Prefix
	}
	if !maps.Equal(got, want) {
		t.Fatalf("released %v\nwant %v", got, want)
	}
	if a, err := intro.Adapter(t.Context()); err != nil || a.SeesCNI != "live-1" {
		t.Fatalf("ipamctl adapter: sees CNI %q, %v; want shown by live-1", a.SeesCNI, err)
	}
	if ip, err := cni.add(t.Context(), "new-1"); err != nil || ip != "198.18.0.3/27" {
		t.Fatalf("ADD new-1 = %q, %v; want 198.18.0.3/27", ip, err)
	}
	pods := map[string]string{"live-1": addr(1), "live-2": addr(2), "new-1": addr(3)}
	if got := podsByID(mustPods(t, intro)); !maps.Equal(got, pods) {
		t.Fatalf("pods %v, want %v", got, pods)
	}
	if pool := mustPool(t, intro); pool.Free+pool.Cooling != 27 {
		t.Fatalf("pool %+v, want 27 addresses free", pool)
	}
	p.stop()
}

func isExhausted(err error) bool {
	var werr *wire.Error
	return errors.As(err, &werr) && werr.Code == wire.CodeResourceExhausted
}

// snapshotState and writeRaw let a test point the adapter at another
// "runtime" for a while and come back.
func (n *node) snapshotState() testadapter.State {
	n.t.Helper()
	st, err := testadapter.ReadState(n.state)
	if err != nil {
		n.t.Fatal(err)
	}
	return st
}

func (n *node) writeRaw(st testadapter.State) {
	n.t.Helper()
	if err := testadapter.WriteState(n.state, st); err != nil {
		n.t.Fatal(err)
	}
}
