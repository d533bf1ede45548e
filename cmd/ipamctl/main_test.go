package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http/httptest"
	"net/netip"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sandboxipam/sandboxipam/ipamd/adminsock"
	"github.com/sandboxipam/sandboxipam/ipamd/datastore"
	"github.com/sandboxipam/sandboxipam/ipamd/introspect"
	"github.com/sandboxipam/sandboxipam/ipamd/introspect/schema"
	"github.com/sandboxipam/sandboxipam/ipamd/ipsource/static"
	"github.com/sandboxipam/sandboxipam/ipamd/server"
)

// serveIpamd serves reads over TCP and the admin API on a unix socket,
// as ipamd does; it returns both addresses.
func serveIpamd(t *testing.T) (addr, admin string) {
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
	if _, err := store.Assign(ctx, datastore.Key{Network: "net", SandboxID: "sandbox-1", IfName: "eth0"}, datastore.Pod{Name: "web"}); err != nil {
		t.Fatal(err)
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
	var stdout, stderr bytes.Buffer
	if code := run([]string{"--help"}, &stdout, &stderr); code != 0 || !strings.Contains(stderr.String(), "reconcile --dry-run") ||
		!strings.Contains(stderr.String(), "-admin-socket") || !strings.Contains(stderr.String(), "only root and ipamd's own uid") ||
		!strings.Contains(stderr.String(), "--force") {
		t.Errorf("--help exit %d:\n%s", code, stderr.String())
	}
	stderr.Reset()
	if code := run([]string{"frobnicate"}, &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), `unknown command "frobnicate"`) {
		t.Errorf("unknown command exit %d: %s", code, stderr.String())
	}
	stderr.Reset()
	if code := run([]string{"-o", "yaml", "pods"}, &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), `-o must be table or json, got "yaml"`) {
		t.Errorf("-o yaml exit %d: %s", code, stderr.String())
	}
}
