package compat_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sandboxipam/sandboxipam/internal/ipamdproc"
	"github.com/sandboxipam/sandboxipam/internal/release"
	"github.com/sandboxipam/sandboxipam/internal/testadapter"
	"github.com/sandboxipam/sandboxipam/internal/testsupport"
	"github.com/sandboxipam/sandboxipam/internal/version"
	"github.com/sandboxipam/sandboxipam/ipamd/config"
	"github.com/sandboxipam/sandboxipam/runtime"
)

// network is the CNI network name, ipamd's network setting.
const network = "podnet"

// The pool: one range of each family, so every assignment holds two
// addresses (the checkpoint's ips, IPv4 first).
var cidrs = []string{"198.18.10.0/28", "fd00:10::/120"}

// build is one release's binaries.
type build struct {
	name                            string // "v0.1.0 (previous)" or "v0.2.0 (this tree)", for messages
	release                         string // the release its --version must name
	ipamd, ipamctl, plugin, adapter string
}

// previousBuild is the previous release's binaries, built from its tree in
// the repository's history (cached by commit). It skips the test when the
// history is absent, failing under CI=true.
func previousBuild(t *testing.T) build {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		testsupport.SkipOrFail(t, "cannot build the previous release: %v", err)
	}
	bins, err := release.Previous.CachedBinaries(t.Context(), testsupport.Root(t))
	if errors.Is(err, release.ErrHistoryAbsent) {
		testsupport.SkipOrFail(t, "%v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	b := build{name: release.Previous.Version + " (previous)", release: release.Previous.Version,
		ipamd: bins.IPAMD, ipamctl: bins.IPAMCtl, plugin: bins.Plugin, adapter: bins.TestAdapter}
	b.requireVersion(t)
	return b
}

// currentBuild is this tree's binaries, as every test builds them.
func currentBuild(t *testing.T) build {
	t.Helper()
	b := build{name: release.Current.Version + " (this tree)", release: release.Current.Version,
		ipamd:   testsupport.Binary(t, "./cmd/ipamd"),
		ipamctl: testsupport.Binary(t, "./cmd/ipamctl"),
		plugin:  testsupport.StaticBinary(t, "./cmd/sandboxipam"),
		adapter: testadapter.Build(t),
	}
	b.requireVersion(t)
	return b
}

// requireVersion: ipamd, ipamctl and the plugin say the build's release
// (this tree's with the commit after "+"), so a mix-up of the two builds
// fails here rather than passing as a test of one release against itself.
func (b build) requireVersion(t *testing.T) {
	t.Helper()
	for _, bin := range []string{b.ipamd, b.ipamctl, b.plugin} {
		out, err := exec.Command(bin, "--version").Output()
		fields := strings.Fields(string(out))
		if err != nil || len(fields) == 0 {
			t.Fatalf("%s --version: %q, %v", bin, out, err)
		}
		if rel, _ := version.Split(fields[len(fields)-1]); rel != b.release {
			t.Fatalf("%s --version = %q: the %s build's binary should say %s", bin, strings.TrimSpace(string(out)), b.name, b.release)
		}
	}
}

// node is one node's ipamd state: its state directory, the runtime's
// state file (the sandboxes the test adapter lists), the config every
// release's ipamd reads, and the introspection port the test holds while
// no ipamd runs.
type node struct {
	t         *testing.T
	dir       string
	cfg       config.Config
	runtime   string
	port      *testsupport.Port
	sandboxes map[string]runtime.Sandbox
}

func newNode(t *testing.T) *node {
	t.Helper()
	dir := testsupport.ShortDir(t, "compat")
	n := &node{t: t, dir: dir, runtime: filepath.Join(dir, "runtime.json"), port: testsupport.ReservePort(t),
		sandboxes: map[string]runtime.Sandbox{}}
	cfg := config.DefaultConfig()
	cfg.Socket = filepath.Join(dir, "run", "ipamd.sock")
	cfg.StateDir = filepath.Join(dir, "state")
	cfg.Network = network
	// Long enough that a released address is still cooling in every later
	// phase: a release that lost the cooling state would hand it out again.
	cfg.Cooldown = time.Hour
	cfg.Reconcile.Interval = time.Hour // the start's pass is the one that counts
	cfg.PodLinks.PodWiring = config.PodWiringIPAMOnly
	cfg.Runtime.Args = []string{"--state=" + n.runtime}
	cfg.Runtime.AutoMTLS = false
	// A cold start of the adapter plugin on a busy machine takes seconds.
	cfg.Advanced.Adapter.StartTimeout = time.Minute
	cfg.Advanced.Adapter.HealthInterval = 10 * time.Second
	cfg.IPSource.Type = config.SourceStatic
	cfg.IPSource.Static.CIDRs = cidrs
	cfg.Introspection.Address = n.port.Addr
	cfg.Metrics.Address = ""
	cfg.Log.Level = "debug"
	n.cfg = cfg
	n.writeRuntime()
	return n
}

// writeRuntime writes the sandboxes the runtime lists.
func (n *node) writeRuntime() {
	n.t.Helper()
	st := testadapter.State{RuntimeName: "fake-runtime", RuntimeVersion: "1.0", Sandboxes: []runtime.Sandbox{}}
	for _, s := range n.sandboxes {
		st.Sandboxes = append(st.Sandboxes, s)
	}
	slices.SortFunc(st.Sandboxes, func(a, b runtime.Sandbox) int { return strings.Compare(a.ID, b.ID) })
	if err := testadapter.WriteState(n.runtime, st); err != nil {
		n.t.Fatal(err)
	}
}

// sandboxID is a 64-hex-digit infra sandbox ID for pod name.
func sandboxID(name string) string {
	return fmt.Sprintf("%064x", []byte(name))[:64]
}

// running is one run of a release's ipamd on the node.
type running struct {
	n    *node
	b    build
	proc *ipamdproc.Process
}

// start runs b's ipamd on the node's state directory, with b's adapter,
// and waits until /readyz says it hands out addresses. With loaded, the
// state directory holds the other release's checkpoint: an ipamd that
// did not load it (refused it, set it aside as corrupt) fails the test at
// once, with its own words, rather than when readiness never comes.
func (n *node) start(b build, loaded bool) *running {
	n.t.Helper()
	cfg := n.cfg
	cfg.Runtime.Adapter = b.adapter
	cfgPath := filepath.Join(n.dir, "ipamd.yaml")
	if err := ipamdproc.WriteConfig(cfgPath, cfg); err != nil {
		n.t.Fatal(err)
	}
	proc, err := ipamdproc.Start(b.ipamd, cfgPath, filepath.Join(n.dir, "ipamd.log"), n.port)
	if err != nil {
		n.t.Fatal(err)
	}
	r := &running{n: n, b: b, proc: proc}
	n.t.Cleanup(func() { _ = proc.Kill() })
	client := &http.Client{Timeout: 10 * time.Second}
	ctx, cancel := context.WithTimeout(n.t.Context(), testsupport.WaitDeadline)
	defer cancel()
	err = proc.WaitReady(ctx, "the "+b.name+" ipamd to be ready", func(ctx context.Context) error {
		if loaded {
			var pool poolView
			if err := getJSON(ctx, client, "http://"+n.port.Addr+"/v1/pool", &pool); err != nil {
				return err
			}
			if rc := pool.Recovery; rc.Checkpoint != "loaded" {
				return fmt.Errorf("%w: the %s ipamd did not load the checkpoint the other release wrote: %s: %s",
					testsupport.ErrGiveUp, b.name, rc.Checkpoint, rc.Detail)
			}
		}
		return getJSON(ctx, client, "http://"+n.port.Addr+"/readyz", nil)
	})
	if err != nil {
		n.t.Fatal(err)
	}
	return r
}

// getJSON GETs url and decodes its JSON body into v (nil: only a 200 is
// wanted).
func getJSON(ctx context.Context, client *http.Client, url string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var body bytes.Buffer
	if _, err := body.ReadFrom(resp.Body); err != nil {
		return fmt.Errorf("%s: %w", url, err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s: %s", url, resp.Status, strings.TrimSpace(body.String()))
	}
	if v == nil {
		return nil
	}
	if err := json.Unmarshal(body.Bytes(), v); err != nil {
		return fmt.Errorf("%s: %w", url, err)
	}
	return nil
}

// stop ends ipamd with SIGTERM, as a DaemonSet rollout does, and requires
// a clean exit.
func (r *running) stop() {
	r.n.t.Helper()
	if err := r.proc.Stop(); err != nil {
		r.n.t.Fatalf("the %s ipamd: %v\n%s", r.b.name, err, r.proc.LogTail(30))
	}
}

// pod is one attachment as ipamctl pods -o json shows it; only the fields
// both releases print are read.
type pod struct {
	SandboxID string   `json:"sandboxID"`
	Network   string   `json:"network"`
	IfName    string   `json:"ifName"`
	Name      string   `json:"name"`
	Namespace string   `json:"namespace"`
	IPs       []string `json:"ips"`
}

// ipamctl runs the build's ipamctl against the running ipamd and decodes
// its JSON output into v.
func (r *running) ipamctl(v any, args ...string) {
	r.n.t.Helper()
	args = append(args, "-o", "json", "--addr", r.n.port.Addr)
	out, err := exec.Command(r.b.ipamctl, args...).Output()
	if err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			err = fmt.Errorf("%w: %s", err, exit.Stderr)
		}
		r.n.t.Fatalf("the %s ipamctl %s: %v", r.b.name, strings.Join(args, " "), err)
	}
	if err := json.Unmarshal(out, v); err != nil {
		r.n.t.Fatalf("the %s ipamctl %s printed %s: %v", r.b.name, strings.Join(args, " "), out, err)
	}
}

// requirePods: the running ipamd holds exactly want (pod name to its
// addresses, IPv4 first), each under the pod's sandbox ID on the network.
func (r *running) requirePods(want map[string][]string) {
	r.n.t.Helper()
	var got struct{ Pods []pod }
	r.ipamctl(&got, "pods")
	held := map[string][]string{}
	for _, p := range got.Pods {
		if p.SandboxID != sandboxID(p.Name) || p.Network != network || p.IfName != "eth0" || p.Namespace != "default" {
			r.n.t.Errorf("the %s ipamd holds %+v: the key or the pod is not the one ADDed", r.b.name, p)
		}
		held[p.Name] = p.IPs
	}
	if !mapsEqual(held, want) {
		r.n.t.Fatalf("the %s ipamd holds %v, want exactly %v", r.b.name, held, want)
	}
}

// poolView is the part of GET /v1/pool (ipamctl pool -o json) that says
// how ipamd found its checkpoint; both releases print it.
type poolView struct {
	// Cooling counts the released addresses still waiting out the
	// cooldown, each family's apart.
	Cooling  int `json:"cooling"`
	Recovery struct {
		Checkpoint  string `json:"checkpoint"`
		Detail      string `json:"detail"`
		Assignments int    `json:"assignments"`
	} `json:"recovery"`
	Proof struct {
		Unproven bool `json:"unproven"`
	} `json:"proof"`
}

// requireLoaded: the running ipamd, through its own ipamctl, says it
// started from the checkpoint it found, trusting it (not set aside as
// corrupt, not rebuilt from the runtime), with n assignments in it, and
// cooling addresses still cooling (a release that dropped them would hand
// a DELed pod's address to the next pod at once).
func (r *running) requireLoaded(n, cooling int) {
	r.n.t.Helper()
	var pool poolView
	r.ipamctl(&pool, "pool")
	if rc := pool.Recovery; rc.Checkpoint != "loaded" || rc.Assignments != n || pool.Proof.Unproven || pool.Cooling != cooling {
		r.n.t.Fatalf("the %s ipamd found the checkpoint %q (%s) with %d assignments, unproven %v, %d addresses cooling; want it loaded with %d, %d cooling",
			r.b.name, rc.Checkpoint, rc.Detail, rc.Assignments, pool.Proof.Unproven, pool.Cooling, n, cooling)
	}
}

func mapsEqual(a, b map[string][]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || !slices.Equal(v, w) {
			return false
		}
	}
	return true
}

// cniOutcome is one run of a CNI plugin binary.
type cniOutcome struct {
	stdout []byte
	err    error
}

// cniError is the error object a CNI plugin prints when it fails.
type cniError struct {
	Code    uint   `json:"code"`
	Msg     string `json:"msg"`
	Details string `json:"details"`
}

// conf is the network config the runtime hands the plugin: sandboxipam as
// the IPAM plugin of another main plugin, so it asks ipamd and returns the
// addresses without touching a network namespace.
func (n *node) conf(prevResult []byte) []byte {
	c := map[string]any{
		"cniVersion": "1.1.0", "name": network, "type": "compat-main",
		"ipam": map[string]any{"type": "sandboxipam", "ipamdSocket": n.cfg.Socket, "timeout": "30s"},
	}
	if prevResult != nil {
		c["prevResult"] = json.RawMessage(prevResult)
	}
	b, err := json.Marshal(c)
	if err != nil {
		n.t.Fatal(err)
	}
	return b
}

// cni runs b's plugin binary for command on pod name's sandbox, as a
// runtime does.
func (n *node) cni(b build, command, name string, prevResult []byte) cniOutcome {
	n.t.Helper()
	ctx, cancel := context.WithTimeout(n.t.Context(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, b.plugin)
	cmd.Stdin = bytes.NewReader(n.conf(prevResult))
	id := sandboxID(name)
	cmd.Env = []string{
		"CNI_COMMAND=" + command, "CNI_PATH=" + filepath.Dir(b.plugin),
	}
	if command != "STATUS" {
		cmd.Env = append(cmd.Env, "CNI_CONTAINERID="+id, "CNI_IFNAME=eth0", "CNI_NETNS=/var/run/netns/"+name,
			"CNI_ARGS=K8S_POD_NAMESPACE=default;K8S_POD_NAME="+name+";K8S_POD_INFRA_CONTAINER_ID="+id+";K8S_POD_UID=uid-"+name)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if err != nil {
		var ce cniError
		if jerr := json.Unmarshal(stdout.Bytes(), &ce); jerr == nil && ce.Code != 0 {
			err = fmt.Errorf("%w: CNI error %d: %s: %s", err, ce.Code, ce.Msg, ce.Details)
		} else {
			err = fmt.Errorf("%w: %s %s", err, stdout.Bytes(), stderr.Bytes())
		}
	}
	return cniOutcome{stdout: stdout.Bytes(), err: err}
}

// must requires the call to succeed.
func (o cniOutcome) must(t *testing.T, what string) []byte {
	t.Helper()
	if o.err != nil {
		t.Fatalf("%s: %v", what, o.err)
	}
	return o.stdout
}

// add makes the runtime list pod name's sandbox, then ADDs it through b's
// plugin; it requires exactly the addresses want and returns the result.
func (n *node) add(b build, name string, want ...string) []byte {
	n.t.Helper()
	id := sandboxID(name)
	n.sandboxes[id] = runtime.Sandbox{ID: id, Name: name, Namespace: "default", UID: "uid-" + name,
		State: runtime.StateReady, CreatedAt: time.Unix(1_700_000_000, 0).UTC(), NetNS: "/var/run/netns/" + name}
	n.writeRuntime()
	what := fmt.Sprintf("ADD %s through the %s plugin", name, b.name)
	out := n.cni(b, "ADD", name, nil).must(n.t, what)
	var res struct {
		IPs []struct {
			Address string `json:"address"`
		} `json:"ips"`
	}
	if err := json.Unmarshal(out, &res); err != nil {
		n.t.Fatalf("%s printed %s: %v", what, out, err)
	}
	var got []string
	for _, ip := range res.IPs {
		got = append(got, ip.Address)
	}
	if !slices.Equal(got, want) {
		n.t.Fatalf("%s gave %v, want exactly %v", what, got, want)
	}
	return out
}

// del DELs pod name through b's plugin, then the runtime forgets it.
func (n *node) del(b build, name string) {
	n.t.Helper()
	n.cni(b, "DEL", name, nil).must(n.t, fmt.Sprintf("DEL %s through the %s plugin", name, b.name))
	delete(n.sandboxes, sandboxID(name))
	n.writeRuntime()
}

// check CHECKs pod name against the result its ADD printed.
func (n *node) check(b build, name string, prevResult []byte) {
	n.t.Helper()
	n.cni(b, "CHECK", name, prevResult).must(n.t, fmt.Sprintf("CHECK %s through the %s plugin", name, b.name))
}

// addrs strips the prefix lengths ipamctl does not print from CIDR
// strings: ipamctl pods lists bare addresses.
func addrs(prefixes ...string) []string {
	out := make([]string, 0, len(prefixes))
	for _, p := range prefixes {
		a, _, _ := strings.Cut(p, "/")
		out = append(out, a)
	}
	return out
}

// dumpOnFailure prints the node's ipamd log when the test failed.
func (n *node) dumpOnFailure() {
	n.t.Cleanup(func() {
		if n.t.Failed() {
			data, _ := os.ReadFile(filepath.Join(n.dir, "ipamd.log"))
			lines := strings.Split(string(data), "\n")
			n.t.Logf("ipamd log (last 60 lines):\n%s", strings.Join(lines[max(0, len(lines)-60):], "\n"))
		}
	})
}
