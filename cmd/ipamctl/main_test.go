package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http/httptest"
	"net/netip"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/sandboxipam/sandboxipam/internal/version"
	"github.com/sandboxipam/sandboxipam/ipamd/adminsock"
	"github.com/sandboxipam/sandboxipam/ipamd/datastore"
	"github.com/sandboxipam/sandboxipam/ipamd/introspect"
	"github.com/sandboxipam/sandboxipam/ipamd/introspect/schema"
	"github.com/sandboxipam/sandboxipam/ipamd/ipsource/static"
	"github.com/sandboxipam/sandboxipam/ipamd/server"
)

// serveIpamd serves reads over TCP and the admin API on a unix socket,
// as ipamd does, over a real store holding one attachment per key (or
// sandbox-1's alone); it returns both addresses.
func serveIpamd(t *testing.T, keys ...datastore.Key) (addr, admin string) {
	t.Helper()
	ctx := context.Background()
	store, err := datastore.Open(ctx, datastore.Options{Path: filepath.Join(t.TempDir(), "ck")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	src, _ := static.New(static.Config{CIDRs: []netip.Prefix{netip.MustParsePrefix("198.18.0.0/29")}})
	if err := src.Run(ctx, store); err != nil {
		t.Fatal(err)
	}
	if len(keys) == 0 {
		keys = []datastore.Key{{Network: "net", SandboxID: "sandbox-1", IfName: "eth0"}}
	}
	for _, k := range keys {
		if _, err := store.Assign(ctx, k, datastore.Pod{Name: "web"}); err != nil {
			t.Fatal(err)
		}
	}
	deps := introspect.Deps{Store: store, Source: "static", AdminSocket: filepath.Join(t.TempDir(), "admin.sock"),
		Release: func(ctx context.Context, req schema.ReleaseRequest) (schema.Release, error) {
			a, _, err := store.ReleaseFor(ctx, datastore.Key{Network: req.Network, SandboxID: req.SandboxID, IfName: req.IfName}, datastore.ReasonOperator)
			return schema.Release{Released: introspect.PodView(a, a.AssignedAt), Forced: req.Force}, err
		}}
	srv := httptest.NewServer(introspect.Handler(deps))
	t.Cleanup(srv.Close)
	l, err := server.Listen(ctx, deps.AdminSocket)
	if err != nil {
		t.Fatal(err)
	}
	as := adminsock.Serve(l, introspect.AdminHandler(deps), nil)
	t.Cleanup(func() { _ = as.Shutdown(context.Background()) })
	return srv.Listener.Addr().String(), deps.AdminSocket
}

func TestCommands(t *testing.T) {
	addr, admin := serveIpamd(t)
	var stdout, stderr bytes.Buffer
	if code := run([]string{"--addr", addr, "pods"}, &stdout, &stderr); code != 0 || !strings.Contains(stdout.String(), "sandbox-1") ||
		!strings.Contains(stdout.String(), "198.18.0.1/29") {
		t.Errorf("pods exit %d:\n%s%s", code, stdout.String(), stderr.String())
	}
	stdout.Reset()
	if code := run([]string{"--addr", addr, "-o", "json", "pool"}, &stdout, &stderr); code != 0 {
		t.Fatalf("pool -o json exit %d: %s", code, stderr.String())
	}
	var pool schema.Pool
	if err := json.Unmarshal(stdout.Bytes(), &pool); err != nil || pool.Total != 6 || pool.Assigned != 1 {
		t.Errorf("pool json = %+v, %v", pool, err)
	}
	stderr.Reset()
	if code := run([]string{"--addr", addr, "--admin-socket", admin, "reconcile", "--dry-run"}, &stdout, &stderr); code != 1 ||
		!strings.Contains(stderr.String(), "no runtime adapter: reconciliation is off") {
		t.Errorf("reconcile without adapter exit %d: %s", code, stderr.String())
	}
}

// release and reconcile go to the admin socket, never to the TCP address;
// without one they fail, naming it.
func TestChangesUseTheAdminSocket(t *testing.T) {
	addr, admin := serveIpamd(t)
	missing := filepath.Join(t.TempDir(), "none.sock")
	for _, args := range [][]string{{"reconcile"}, {"release", "--network", "net", "sandbox-1"}} {
		var stdout, stderr bytes.Buffer
		full := append([]string{"--addr", addr, "--admin-socket", missing}, args...)
		if code := run(full, &stdout, &stderr); code != 1 || !strings.Contains(stderr.String(), "none.sock") {
			t.Errorf("%v without the admin socket: exit %d: %s", args, code, stderr.String())
		}
	}
	var stdout, stderr bytes.Buffer
	if code := run([]string{"--addr", addr, "--admin-socket", admin, "release", "sandbox-1"}, &stdout, &stderr); code != 0 ||
		stdout.String() != "released 198.18.0.1 of sandbox sandbox-1 (pod /web)\n" {
		t.Errorf("release exit %d: %q %s", code, stdout.String(), stderr.String())
	}
}

func TestUsage(t *testing.T) {
	stdout, stderr, code := ctl(t, "--help")
	for _, want := range []string{"reconcile", "--admin-socket", "only root and ipamd's own uid", "release --force 93e629d853d9",
		"3  check found no disagreement but could not compare something"} {
		if code != 0 || !strings.Contains(stdout, want) {
			t.Errorf("--help exit %d lacks %q:\n%s%s", code, want, stdout, stderr)
		}
	}
	// Every command has its own help, with its own examples.
	for cmd, want := range map[string]string{
		"release":   "a unique prefix of it (at least 6",
		"check":     "exits 3 unless it found a disagreement (1 wins)",
		"ready":     `{"ready": true|false, "reasons": [...]}`,
		"reconcile": "sudo ipamctl reconcile --dry-run",
		"who":       "ipamctl who prod/web-1 -o json",
	} {
		if stdout, _, code := ctl(t, cmd, "--help"); code != 0 || !strings.Contains(stdout, want) {
			t.Errorf("%s --help exit %d lacks %q:\n%s", cmd, code, want, stdout)
		}
	}
	if _, stderr, code := ctl(t); code != 2 || !strings.Contains(stderr, "Available Commands:") {
		t.Errorf("no command: exit %d, want 2 and the help on stderr:\n%s", code, stderr)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"frobnicate"}, `unknown command "frobnicate" for "ipamctl"`},
		{[]string{"-o", "yaml", "pods"}, `invalid argument "yaml" for "-o, --output" flag: must be table or json`},
		{[]string{"pods", "--output=yaml"}, `invalid argument "yaml" for "-o, --output" flag: must be table or json`},
		{[]string{"--bogus", "pods"}, "unknown flag: --bogus"},
		{[]string{"pods", "--bogus"}, "unknown flag: --bogus"},
		{[]string{"pods", "extra"}, `unknown command "extra" for "ipamctl pods"`},
		{[]string{"release"}, "ipamctl release wants SANDBOX-ID, got 0 argument(s)"},
		{[]string{"check", "--dry-run"}, "unknown flag: --dry-run"},
		{[]string{"--timeout", "soon", "pods"}, `invalid argument "soon" for "--timeout" flag`},
	} {
		if _, stderr, code := ctl(t, c.args...); code != 2 || !strings.Contains(stderr, c.want) {
			t.Errorf("%q: exit %d, want 2 and %q: %s", c.args, code, c.want, stderr)
		}
	}
}

// Flags go before or after the command, as in kubectl: -o json after it
// prints JSON, never the table.
func TestFlagsBeforeOrAfterTheCommand(t *testing.T) {
	addr, _ := serveIpamd(t)
	for _, args := range [][]string{
		{"--addr", addr, "-o", "json", "pods"},
		{"pods", "-o", "json", "--addr", addr},
		{"pods", "--output=json", "--addr=" + addr},
	} {
		stdout, stderr, code := ctl(t, args...)
		var pods schema.Pods
		if err := json.Unmarshal([]byte(stdout), &pods); code != 0 || err != nil || len(pods.Pods) != 1 || pods.Pods[0].SandboxID != "sandbox-1" {
			t.Errorf("%q: exit %d, %v: want the one pod in JSON:\n%s%s", args, code, err, stdout, stderr)
		}
	}
	// IPAMCTL_ADDR stands in for --addr.
	t.Setenv("IPAMCTL_ADDR", addr)
	if stdout, stderr, code := ctl(t, "pods"); code != 0 || !strings.Contains(stdout, "sandbox-1") {
		t.Errorf("pods with IPAMCTL_ADDR: exit %d:\n%s%s", code, stdout, stderr)
	}
}

func TestCompletionAndVersion(t *testing.T) {
	for shell, want := range map[string]string{"bash": "__start_ipamctl", "zsh": "#compdef ipamctl", "fish": "complete -c ipamctl"} {
		if stdout, stderr, code := ctl(t, "completion", shell); code != 0 || !strings.Contains(stdout, want) {
			t.Errorf("completion %s: exit %d, lacks %q: %s", shell, code, want, stderr)
		}
	}
	// -o completes to its two values.
	if stdout, _, code := ctl(t, "__complete", "pods", "-o", ""); code != 0 || !strings.HasPrefix(stdout, "table\njson\n:4\n") {
		t.Errorf("completing -o: exit %d:\n%s", code, stdout)
	}
	if stdout, _, code := ctl(t, "--version"); code != 0 || stdout != version.Line("ipamctl")+"\n" {
		t.Errorf("--version: exit %d: %q", code, stdout)
	}
}

// ctl runs ipamctl with args and returns what it printed and its exit code.
func ctl(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = run(args, &out, &errOut)
	return out.String(), errOut.String(), code
}

// release takes a unique prefix of a sandbox ID, as the help's example
// does; an ambiguous one is refused naming every match, and one that
// matches nothing says so. ipamd's admin socket and store are real.
func TestReleaseByUniquePrefix(t *testing.T) {
	const (
		first  = "93e629d853d9a7c1f00dd3b0f3c2e6a1b5c4d7e8f9a0b1c2d3e4f5a6b7c8d9e0"
		second = "93e629d853d9b4e2a11ee4c1a4d3f7b2c6d5e8f9a0b1c2d3e4f5a6b7c8d9e0f1"
		twoNet = "c32c237fb529e1d4c6a8b0f2e4d6c8a0b2d4f6e8a0c2e4a6b8d0f2a4c6e8b0d2"
	)
	addr, admin := serveIpamd(t,
		datastore.Key{Network: "net", SandboxID: first, IfName: "eth0"},
		datastore.Key{Network: "net", SandboxID: second, IfName: "eth0"},
		datastore.Key{Network: "net", SandboxID: twoNet, IfName: "eth0"},
		datastore.Key{Network: "other", SandboxID: twoNet, IfName: "eth0"})
	release := func(args ...string) (string, string, int) {
		return ctl(t, append([]string{"release", "--addr", addr, "--admin-socket", admin}, args...)...)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"93e629d853d9"}, `sandbox "93e629d853d9" on interface eth0: ambiguous: it matches more than one attachment: ` +
			first + " (network net, pod /web), " + second + " (network net, pod /web); give more of the ID, or --network"},
		{[]string{"c32c237fb529"}, "ambiguous: it matches more than one attachment: " +
			twoNet + " (network net, pod /web), " + twoNet + " (network other, pod /web)"},
		{[]string{"0123456789ab"}, `sandbox ID or prefix "0123456789ab" on interface eth0: ipamd holds no address for it (see ipamctl pods)`},
		{[]string{"--ifname", "net1", first}, `sandbox ID or prefix "` + first + `" on interface net1: ipamd holds no address for it`},
		{[]string{"93e6"}, `sandbox "93e6": too short a sandbox ID prefix: give at least 6 characters of the ID`},
	} {
		if stdout, stderr, code := release(c.args...); code != 1 || stdout != "" || !strings.Contains(stderr, c.want) {
			t.Errorf("release %q: exit %d, want 1 and %q:\n%s%s", c.args, code, c.want, stdout, stderr)
		}
	}
	if stdout, _, _ := ctl(t, "pods", "--addr", addr); strings.Count(stdout, "\n") != 6 {
		t.Fatalf("a refused release released something:\n%s", stdout)
	}
	stdout, stderr, code := release("93e629d853d9b")
	if code != 0 || stdout != "released 198.18.0.2 of sandbox "+second+" (pod /web)\n" {
		t.Fatalf("release of a unique prefix: exit %d: %q %s", code, stdout, stderr)
	}
	stdout, stderr, code = release("--network", "other", "-o", "json", "c32c237fb529")
	var v schema.Release
	if err := json.Unmarshal([]byte(stdout), &v); err != nil || code != 0 || v.Released.SandboxID != twoNet || v.Released.Network != "other" {
		t.Fatalf("release --network other of a prefix: exit %d, %v: %+v %s", code, err, v, stderr)
	}
	pods, _, _ := ctl(t, "pods", "--addr", addr)
	if strings.Contains(pods, second) || !strings.Contains(pods, first) || !strings.Contains(pods, "2 assignment(s)") {
		t.Fatalf("after two releases, want %s and %s on net left:\n%s", first[:12], twoNet[:12], pods)
	}
}

// ready is /readyz: its body, exit 0 when ready and 1 when not, and
// {"ready", "reasons"} in JSON.
func TestReady(t *testing.T) {
	var reasons atomic.Pointer[[]string] // the handler reads it on the server's goroutine
	reasons.Store(&[]string{})
	srv := httptest.NewServer(introspect.Handler(introspect.Deps{Ready: func() (bool, []string) {
		why := *reasons.Load()
		return len(why) == 0, why
	}}))
	t.Cleanup(srv.Close)
	addr := srv.Listener.Addr().String()
	if stdout, stderr, code := ctl(t, "ready", "--addr", addr); code != 0 || stdout != "ready\n" || stderr != "" {
		t.Errorf("ready: exit %d: %q %q", code, stdout, stderr)
	}
	why := []string{"the datastore is unproven: pod default/web-1's address is not accounted for", "no conflist written yet"}
	reasons.Store(&why)
	stdout, stderr, code := ctl(t, "ready", "--addr", addr)
	if code != 1 || stdout != "not ready:\n- "+why[0]+"\n- "+why[1]+"\n" || stderr != "ipamctl: ipamd is not ready: 2 reason(s)\n" {
		t.Errorf("not ready: exit %d: %q %q", code, stdout, stderr)
	}
	stdout, _, code = ctl(t, "ready", "-o", "json", "--addr", addr)
	var v struct {
		Ready   *bool    `json:"ready"`
		Reasons []string `json:"reasons"`
	}
	if err := json.Unmarshal([]byte(stdout), &v); err != nil || code != 1 || v.Ready == nil || *v.Ready || !slices.Equal(v.Reasons, why) {
		t.Errorf("not ready -o json: exit %d, %v: %s", code, err, stdout)
	}
	reasons.Store(&[]string{})
	stdout, _, code = ctl(t, "ready", "-o", "json", "--addr", addr)
	if code != 0 || stdout != "{\n  \"ready\": true,\n  \"reasons\": []\n}\n" {
		t.Errorf("ready -o json: exit %d: %q", code, stdout)
	}
}
