package daemon_test

import (
	"bytes"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sandboxipam/sandboxipam/internal/testsupport"
	"github.com/sandboxipam/sandboxipam/ipamd/config"
	"github.com/sandboxipam/sandboxipam/ipamd/introspect/client"
)

// The last rule, through the real ipamd and the real plugin as
// IPAM only (no pod link on the node): an IPAM-only pod whose sandbox
// vanishes from the runtime before any listing showed it, while its
// network namespace stays on the node, is not taken for gone though
// GetSandbox says so. ipamd is SIGKILLed and restarted (the namespace
// comes back from the checkpoint); every pass then keeps its address,
// and every other one's, and ipamctl adapter says the adapter is blind,
// naming the sandbox and the namespace. Once the namespace is removed,
// the next pass releases it and the other never-listed pod.
func TestIPAMOnlyPodWhoseNetNSStaysKeepsItsAddress(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real ipamd and CNI plugin; skipped with -short")
	}
	testsupport.RequireRoot(t, "unshare", "umount")
	n := newNode(t, "198.18.0.0/28")
	n.cfg.PodLinks.PodWiring = config.PodWiringAuto // the default: no inference from a missing pod link
	port := n.reserveIntrospection()
	bin, cfgPath, logPath := buildIpamd(t), n.writeConfig(), filepath.Join(n.dir, "ipamd.log")
	cni, intro := cniClient{socket: n.cfg.Socket}, client.NewAdmin(n.cfg.AdminSocketPath())
	plugin := newIPAMOnlyPlugin(t, n.cfg.Socket)
	plugin.netnsDir = t.TempDir()
	p := startOnPort(t, port, bin, cfgPath, logPath, cni, intro)

	live, inNS, short := sandboxID("live"), sandboxID("ipam-in-ns"), sandboxID("short")
	nsPath := filepath.Join(plugin.netnsDir, inNS)
	removeNS := testsupport.NetNS(t, nsPath)
	for i, id := range []string{live, inNS, short} {
		n.addSandbox(id)
		if got, err := plugin.add(t.Context(), id); err != nil || got != []string{"198.18.0.1/28", "198.18.0.2/28", "198.18.0.3/28"}[i] {
			t.Fatalf("ADD %s = %q, %v", id, got, err)
		}
	}
	n.removeSandbox(inNS) // both gone from the runtime before any listing, their DELs lost
	n.removeSandbox(short)
	p.kill()
	port.Release()
	p = startBinary(t, bin, cfgPath, logPath, cni, intro, true)
	p.port = port

	held := map[string]string{live: "198.18.0.1/28", inNS: "198.18.0.2/28", short: "198.18.0.3/28"}
	for range 2 {
		res, err := intro.Reconcile(t.Context(), false)
		if err == nil || len(res.Released) != 0 || !slices.Equal(res.Missing, sorted(inNS, short)) ||
			!strings.Contains(res.Error, "it does not list sandbox "+inNS+", and its network namespace "+nsPath+" is on the node") {
			t.Fatalf("pass with the namespace on the node = %+v, %v; want blind naming %s and %s, nothing released\n%s", res, err, inNS, nsPath, p.logTail())
		}
	}
	if got := podsByID(mustPods(t, intro)); !maps.Equal(got, held) {
		t.Fatalf("pods %v while blind, want %v", got, held)
	}
	a, err := intro.Adapter(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := client.RenderAdapter(&out, a); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"ADAPTER IS BLIND: it does not list 2 sandbox(es) CNI added", "  " + inNS + "\n", "  " + short + "\n",
		"its network namespace " + nsPath + " is on the node"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("ipamctl adapter does not say %q:\n%s", want, out.String())
		}
	}

	removeNS()
	res, err := intro.Reconcile(t.Context(), false)
	got := map[string]string{}
	for _, pod := range res.Released {
		got[pod.SandboxID] = pod.Prefix
	}
	if err != nil || len(res.Missing) != 0 || !maps.Equal(got, map[string]string{inNS: "198.18.0.2/28", short: "198.18.0.3/28"}) {
		t.Fatalf("pass after the namespace went = %+v, %v; released %v", res, err, got)
	}
	if a, err := intro.Adapter(t.Context()); err != nil || a.SeesCNI != live {
		t.Fatalf("ipamctl adapter: sees CNI %q, %v; want shown by %s", a.SeesCNI, err, live)
	}
	if got := podsByID(mustPods(t, intro)); !maps.Equal(got, map[string]string{live: "198.18.0.1/28"}) {
		t.Fatalf("pods %v, want only %s", got, live)
	}
	p.stop()
}

func sorted(ids ...string) []string {
	slices.Sort(ids)
	return ids
}
