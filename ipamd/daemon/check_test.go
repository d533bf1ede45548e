package daemon_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	"github.com/sandboxipam/sandboxipam/internal/testsupport"
	"github.com/sandboxipam/sandboxipam/ipamd/api/hostveth"
	"github.com/sandboxipam/sandboxipam/ipamd/introspect/client"
	"github.com/sandboxipam/sandboxipam/ipamd/introspect/schema"
	"github.com/sandboxipam/sandboxipam/runtime"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
)

// buildPlugin builds cmd/sandboxipam as it ships (static, with make
// build's flags).
func buildPlugin(t *testing.T) string {
	t.Helper()
	return testsupport.StaticBinary(t, "./cmd/sandboxipam")
}

// newNetns makes a named namespace for the test and deletes it after.
func newNetns(t *testing.T, role string) string {
	t.Helper()
	name := fmt.Sprintf("e14%s%d%d", role, os.Getpid()%100000, time.Now().UnixNano()%100000)
	if out, err := exec.Command("ip", "netns", "add", name).CombinedOutput(); err != nil {
		t.Fatalf("ip netns add %s: %v: %s", name, err, out)
	}
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", name).Run() })
	return name
}

func netnsHandle(t *testing.T, name string) *netlink.Handle {
	t.Helper()
	ns, err := netns.GetFromName(name)
	if err != nil {
		t.Fatalf("open netns %s: %v", name, err)
	}
	defer ns.Close()
	h, err := netlink.NewHandleAt(ns)
	if err != nil {
		t.Fatalf("netlink in %s: %v", name, err)
	}
	t.Cleanup(h.Close)
	return h
}

// plugNode is a node whose pods the real CNI plugin wires: it runs in
// hostNS (ipamd reads pod links there, podLinks.netNS), each pod in its own
// namespace.
type plugNode struct {
	*node
	hostNS string
	plugin string            // the plugin binary
	pods   map[string]string // sandbox ID -> pod netns name
}

func sandboxID(seed string) string {
	sum := sha256.Sum256([]byte(seed))
	return hex.EncodeToString(sum[:])
}

func (p *plugNode) netconf() []byte {
	return fmt.Appendf(nil, `{"cniVersion":"1.1.0","name":%q,"type":"sandboxipam","ipamdSocket":%q,"mtu":1400}`, testNetwork, p.cfg.Socket)
}

// plugin runs the plugin for sandbox id as the runtime does.
func (p *plugNode) run(t *testing.T, command, id string) []byte {
	t.Helper()
	cmd := exec.Command("ip", "netns", "exec", p.hostNS, p.plugin)
	cmd.Env = []string{"CNI_COMMAND=" + command, "CNI_CONTAINERID=" + id, "CNI_IFNAME=eth0",
		"CNI_NETNS=/run/netns/" + p.pods[id], "CNI_PATH=/usr/lib/cni", "PATH=" + os.Getenv("PATH"),
		"CNI_ARGS=IgnoreUnknown=1;K8S_POD_NAMESPACE=default;K8S_POD_NAME=pod-" + id[:8] + ";K8S_POD_UID=uid-" + id[:8]}
	cmd.Stdin = bytes.NewReader(p.netconf())
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("plugin %s %s: %v\nstdout: %s\nstderr: %s", command, id[:8], err, stdout.String(), stderr.String())
	}
	return stdout.Bytes()
}

// runPod makes the runtime list a sandbox with a real netns, then ADDs it
// through the plugin.
func (p *plugNode) runPod(t *testing.T, seed string) string {
	t.Helper()
	id := sandboxID(seed)
	p.pods[id] = newNetns(t, "p")
	p.listSandbox(id)
	p.run(t, "ADD", id)
	return id
}

func (p *plugNode) listSandbox(id string) {
	p.mu.Lock()
	p.sandboxes[id] = runtime.Sandbox{ID: id, Name: "pod-" + id[:8], Namespace: "default", UID: "uid-" + id[:8],
		State: runtime.StateReady, CreatedAt: time.Unix(1_700_000_000, 0).UTC(), NetNS: "/run/netns/" + p.pods[id]}
	p.mu.Unlock()
	p.writeState()
}

func hostRoute(t *testing.T, h *netlink.Handle, link, ip string, metric int) *netlink.Route {
	t.Helper()
	l, err := h.LinkByName(link)
	if err != nil {
		t.Fatalf("link %s: %v", link, err)
	}
	return &netlink.Route{LinkIndex: l.Attrs().Index, Dst: &net.IPNet{IP: net.ParseIP(ip).To4(), Mask: net.CIDRMask(32, 32)},
		Scope: netlink.SCOPE_LINK, Priority: metric}
}

func checkKinds(t *testing.T, c *client.Client) (schema.Check, []string) {
	t.Helper()
	v, err := c.Check(t.Context())
	if err != nil {
		t.Fatalf("GET /v1/check: %v", err)
	}
	var out []string
	for _, d := range v.Disagreements {
		id := d.SandboxID
		if len(id) > 8 {
			id = id[:8]
		}
		out = append(out, d.Kind+" "+d.Address+" "+id)
	}
	return v, out
}

func expectCheck(t *testing.T, c *client.Client, want ...string) schema.Check {
	t.Helper()
	v, got := checkKinds(t, c)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		var buf bytes.Buffer
		_ = client.RenderCheck(&buf, v)
		t.Fatalf("check found:\n%s\nwant:\n%s\n\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"), buf.String())
	}
	return v
}

// TestCheckWhoAndMetricsOnARealNode: ipamd in-process, the real plugin
// wiring pods in namespaces the test made, the file-backed test adapter
// as the runtime. Each disagreement is made on purpose and found with
// its exact address; who answers after an ADD, a DEL and a reconcile
// release; the scrape after the scenario has exact values and lints clean.
func TestCheckWhoAndMetricsOnARealNode(t *testing.T) {
	testsupport.RequireRoot(t, "ip")
	n := newNode(t, "198.18.0.0/28")
	p := &plugNode{node: n, hostNS: newNetns(t, "h"), plugin: buildPlugin(t), pods: map[string]string{}}
	n.cfg.PodLinks.NetNS = "/run/netns/" + p.hostNS
	d, cni, intro := startInProcess(t, n)
	ctx := t.Context()
	waitReady(t, cni)

	a, b, c := p.runPod(t, "pod-a"), p.runPod(t, "pod-b"), p.runPod(t, "pod-c")
	if _, err := intro.Reconcile(ctx, false); err != nil { // the runtime lists all three
		t.Fatalf("reconcile: %v", err)
	}
	if v := expectCheck(t, intro); v.Assignments != 3 || v.Sandboxes != 3 || v.PodLinks != 3 || v.Raced {
		t.Fatalf("clean check compared %+v, want 3 of each, not raced", v)
	}

	// who after an ADD: the holder, its runtime state, one event.
	who, err := intro.Who(ctx, "198.18.0.1")
	if err != nil {
		t.Fatal(err)
	}
	if who.QueryKind != "address" || len(who.Holders) != 1 || who.Holders[0].Pod.SandboxID != a ||
		who.Holders[0].Runtime == nil || who.Holders[0].Runtime.State != "Ready" ||
		len(who.History) != 1 || who.History[0].Kind != "assigned" || who.History[0].Pod != "default/pod-"+a[:8] {
		t.Fatalf("who 198.18.0.1 after ADD = %+v", who)
	}

	host := netnsHandle(t, p.hostNS)
	vethA, vethB := hostveth.Name("sbx", a, "eth0"), hostveth.Name("sbx", b, "eth0")
	// 1. a route deleted behind ipamd's back.
	if err := host.RouteDel(hostRoute(t, host, vethB, "198.18.0.2", 0)); err != nil {
		t.Fatalf("delete route: %v", err)
	}
	expectCheck(t, intro, "assigned-no-route 198.18.0.2 "+b[:8])
	// 2. a stray route to an address nobody holds.
	if err := host.RouteAdd(hostRoute(t, host, vethA, "198.18.0.9", 0)); err != nil {
		t.Fatalf("add stray route: %v", err)
	}
	expectCheck(t, intro, "assigned-no-route 198.18.0.2 "+b[:8], "route-unheld 198.18.0.9 "+a[:8])
	// 3. two holders: b's veth routes a's address too.
	if err := host.RouteAdd(hostRoute(t, host, vethB, "198.18.0.1", 50)); err != nil {
		t.Fatalf("add second route: %v", err)
	}
	expectCheck(t, intro, "two-holders 198.18.0.1 ", "assigned-no-route 198.18.0.2 "+b[:8], "route-unheld 198.18.0.9 "+a[:8])
	// 4. a sandbox removed behind ipamd's back, 5. one that holds nothing.
	n.removeSandbox(c)
	e := sandboxID("pod-e")
	p.pods[e] = newNetns(t, "p")
	p.listSandbox(e)
	v := expectCheck(t, intro, "two-holders 198.18.0.1 ", "assigned-no-route 198.18.0.2 "+b[:8], "sandbox-gone 198.18.0.3 "+c[:8],
		"route-unheld 198.18.0.9 "+a[:8], "sandbox-no-address  "+e[:8])
	for _, want := range []string{"198.18.0.1 has 2 holders: ", "sandbox " + a + " (by ipamd)", "sandbox " + b + " (by kernel)",
		"the runtime lists running sandbox " + e + " (pod default/pod-" + e[:8] + ") and ipamd holds no address for it"} {
		if !strings.Contains(fmt.Sprint(v.Disagreements), want) {
			t.Errorf("no disagreement says %q in %+v", want, v.Disagreements)
		}
	}
	// 6. the address gone from inside a pod's namespace.
	pod := netnsHandle(t, p.pods[a])
	eth0, err := pod.LinkByName("eth0")
	if err != nil {
		t.Fatal(err)
	}
	addrs, err := pod.AddrList(eth0, netlink.FAMILY_V4)
	if err != nil || len(addrs) != 1 {
		t.Fatalf("pod a's addresses %v, %v", addrs, err)
	}
	if err := pod.AddrDel(eth0, &addrs[0]); err != nil {
		t.Fatal(err)
	}
	expectCheck(t, intro, "not-in-netns 198.18.0.1 "+a[:8], "two-holders 198.18.0.1 ", "assigned-no-route 198.18.0.2 "+b[:8],
		"sandbox-gone 198.18.0.3 "+c[:8], "route-unheld 198.18.0.9 "+a[:8], "sandbox-no-address  "+e[:8])

	// who after a DEL, and after a reconcile release.
	p.run(t, "DEL", b)
	n.removeSandbox(b)
	who, err = intro.Who(ctx, "198.18.0.2")
	if err != nil {
		t.Fatal(err)
	}
	if len(who.Holders) != 0 || len(who.History) != 2 || who.History[1].Kind != "released" || who.History[1].Reason != "cni_del" ||
		who.History[1].SandboxID != b {
		t.Fatalf("who 198.18.0.2 after DEL = %+v", who)
	}
	// c's pod is gone from the node too (its veth and its network
	// namespace with it): now the reconciler may release it.
	if err := host.LinkDel(&netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: hostveth.Name("sbx", c, "eth0")}}); err != nil {
		t.Fatalf("delete c's veth: %v", err)
	}
	if out, err := exec.Command("ip", "netns", "del", p.pods[c]).CombinedOutput(); err != nil {
		t.Fatalf("delete c's network namespace: %v: %s", err, out)
	}
	rec, err := intro.Reconcile(ctx, false)
	if err != nil || len(rec.Released) != 1 || rec.Released[0].SandboxID != c {
		t.Fatalf("reconcile released %+v, %v; want sandbox c only", rec.Released, err)
	}
	who, err = intro.Who(ctx, c[:13]) // a crictl-length prefix
	if err != nil {
		t.Fatal(err)
	}
	if who.QueryKind != "sandbox" || len(who.Holders) != 0 || len(who.History) != 2 ||
		who.History[1].Reason != "runtime_gone" || who.History[1].IP != "198.18.0.3" {
		t.Fatalf("who %s after the reconcile release = %+v", c[:13], who)
	}
	if who, err = intro.Who(ctx, "default/pod-"+a[:8]); err != nil || who.QueryKind != "pod" || len(who.Holders) != 1 || who.Holders[0].Pod.IP != "198.18.0.1" {
		t.Fatalf("who by pod name = %+v, %v", who, err)
	}

	body := scrape(t, d.MetricsAddr().String())
	for _, line := range []string{
		`ipamd_assigned_addresses_total{how="cni_add"} 3`,
		`ipamd_released_addresses_total{reason="cni_del"} 1`, `ipamd_released_addresses_total{reason="runtime_gone"} 1`,
		`ipamd_released_addresses_total{reason="operator"} 0`,
		`ipamd_addresses{family="ipv4",group="static",state="assigned"} 1`,
		`ipamd_addresses{family="ipv4",group="static",state="unproven"} 0`,
		// The stray route's address: a pod link holds it, ipamd nobody.
		`ipamd_addresses{family="ipv4",group="static",state="quarantined"} 1`,
		`ipamd_quarantine_conflicts_total 1`,
		`ipamd_adapter_state{state="healthy"} 1`,
		`ipamd_reconcile_runs_total{dry_run="false"} `,
		"ipamd_unlisted_assignments 0",
	} {
		if !strings.Contains(body, line) {
			t.Errorf("/metrics lacks %q", line)
		}
	}
	problems, err := promlint.New(strings.NewReader(body)).Lint()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("promlint: %s: %s", p.Metric, p.Text)
	}
}
