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

	"github.com/sandboxipam/sandboxipam/ipamd/datastore"
	"github.com/sandboxipam/sandboxipam/ipamd/introspect"
	"github.com/sandboxipam/sandboxipam/ipamd/introspect/api"
	"github.com/sandboxipam/sandboxipam/ipamd/ipsource/static"
)

func serveIpamd(t *testing.T) string {
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
	srv := httptest.NewServer(introspect.Handler(introspect.Deps{Store: store, Source: "static"}))
	t.Cleanup(srv.Close)
	return srv.Listener.Addr().String()
}

func TestCommands(t *testing.T) {
	addr := serveIpamd(t)
	var stdout, stderr bytes.Buffer
	if code := run([]string{"--addr", addr, "pods"}, &stdout, &stderr); code != 0 || !strings.Contains(stdout.String(), "sandbox-1") ||
		!strings.Contains(stdout.String(), "198.18.0.1/29") {
		t.Errorf("pods exit %d:\n%s%s", code, stdout.String(), stderr.String())
	}
	stdout.Reset()
	if code := run([]string{"--addr", addr, "-o", "json", "pool"}, &stdout, &stderr); code != 0 {
		t.Fatalf("pool -o json exit %d: %s", code, stderr.String())
	}
	var pool api.Pool
	if err := json.Unmarshal(stdout.Bytes(), &pool); err != nil || pool.Total != 6 || pool.Assigned != 1 {
		t.Errorf("pool json = %+v, %v", pool, err)
	}
	stderr.Reset()
	if code := run([]string{"--addr", addr, "reconcile", "--dry-run"}, &stdout, &stderr); code != 1 ||
		!strings.Contains(stderr.String(), "no runtime adapter: reconciliation is off") {
		t.Errorf("reconcile without adapter exit %d: %s", code, stderr.String())
	}
}

func TestUsage(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run([]string{"--help"}, &stdout, &stderr); code != 0 || !strings.Contains(stderr.String(), "reconcile --dry-run") {
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
