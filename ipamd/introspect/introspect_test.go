package introspect_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/sandboxipam/sandboxipam/ipamd/datastore"
	"github.com/sandboxipam/sandboxipam/ipamd/introspect"
	"github.com/sandboxipam/sandboxipam/ipamd/introspect/schema"
	"github.com/sandboxipam/sandboxipam/ipamd/ipsource/static"
	"github.com/sandboxipam/sandboxipam/ipamd/reconcile"
)

var t0 = time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)

func newStore(t testing.TB) *datastore.Store {
	t.Helper()
	ctx := context.Background()
	store, err := datastore.Open(ctx, datastore.Options{Path: filepath.Join(t.TempDir(), "ck"), Now: func() time.Time { return t0 }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	src, err := static.New(static.Config{CIDRs: []netip.Prefix{netip.MustParsePrefix("198.18.0.0/29")},
		Gateways: []netip.Addr{netip.MustParseAddr("198.18.0.1")}})
	if err != nil {
		t.Fatal(err)
	}
	if err := src.Run(ctx, store); err != nil {
		t.Fatal(err)
	}
	return store
}

func get(t *testing.T, srv *httptest.Server, method, path string, out any) int {
	t.Helper()
	req, _ := http.NewRequest(method, srv.URL+path, nil)
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if out != nil {
		if err := json.Unmarshal(body, out); err != nil {
			t.Fatalf("%s %s: %v\n%s", method, path, err, body)
		}
	}
	return resp.StatusCode
}

func TestPodsAndPool(t *testing.T) {
	store := newStore(t)
	key := datastore.Key{Network: "net", SandboxID: "93e629d853d9f70464dd5b54987533ffe87930cb28a6414ddb48c94b69845e85", IfName: "eth0"}
	if _, err := store.Assign(t.Context(), key, datastore.Pod{Name: "coredns", Namespace: "kube-system", UID: "83f10b53"}); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(introspect.Handler(introspect.Deps{Store: store, Source: "static",
		Now: func() time.Time { return t0.Add(90 * time.Second) }}))
	defer srv.Close()

	var pods schema.Pods
	if code := get(t, srv, "GET", schema.PathPods, &pods); code != 200 {
		t.Fatalf("GET /v1/pods = %d", code)
	}
	want := schema.Pod{SandboxID: key.SandboxID, Network: "net", IfName: "eth0", Name: "coredns", Namespace: "kube-system",
		UID: "83f10b53", IP: "198.18.0.2", Prefix: "198.18.0.2/29", Gateway: "198.18.0.1", Group: "static",
		IPs: []string{"198.18.0.2"}, Prefixes: []string{"198.18.0.2/29"},
		AssignedAt: t0, AgeSeconds: 90, AgeFormatted: "1m30s"}
	if len(pods.Pods) != 1 || !reflect.DeepEqual(pods.Pods[0], want) {
		t.Fatalf("pods = %+v\nwant %+v", pods.Pods, want)
	}

	var pool schema.Pool
	if code := get(t, srv, "GET", schema.PathPool, &pool); code != 200 {
		t.Fatalf("GET /v1/pool = %d", code)
	}
	if pool.Source != "static" || pool.Total != 5 || pool.Assigned != 1 || pool.Free != 4 || pool.Cooling != 0 ||
		len(pool.Groups) != 1 || pool.Groups[0] != (schema.Group{Group: "static", Total: 5, Assigned: 1, Free: 4}) ||
		pool.Recovery.Checkpoint != "missing" {
		t.Fatalf("pool = %+v", pool)
	}
}

func TestWithoutAdapterOrENIs(t *testing.T) {
	srv := httptest.NewServer(introspect.AdminHandler(introspect.Deps{Store: newStore(t), Source: "static"}))
	defer srv.Close()
	var e schema.Error
	if code := get(t, srv, "GET", schema.PathAdapter, &e); code != 503 || e.Error != introspect.ErrNoAdapter.Error() {
		t.Errorf("GET /v1/adapter = %d %q", code, e.Error)
	}
	if code := get(t, srv, "POST", schema.PathReconcile+"?dryRun=true", &e); code != 503 {
		t.Errorf("POST /v1/reconcile = %d", code)
	}
	if code := get(t, srv, "GET", schema.PathENIs, &e); code != 404 || !strings.Contains(e.Error, "ipSource.type aws") {
		t.Errorf("GET /v1/enis = %d %q", code, e.Error)
	}
	if code := get(t, srv, "GET", schema.PathReconcile, nil); code != 405 {
		t.Errorf("GET /v1/reconcile = %d, want 405 (POST only)", code)
	}
}

func TestReconcileDryRunParameter(t *testing.T) {
	var gotDry []bool
	store := newStore(t)
	srv := httptest.NewServer(introspect.AdminHandler(introspect.Deps{Store: store,
		Reconcile: func(_ context.Context, dryRun bool) (reconcile.Result, error) {
			gotDry = append(gotDry, dryRun)
			return reconcile.Result{At: t0, DryRun: dryRun, Listed: 3}, nil
		}}))
	defer srv.Close()
	var r schema.Reconcile
	if code := get(t, srv, "POST", schema.PathReconcile+"?dryRun=true", &r); code != 200 || !r.DryRun || r.Listed != 3 {
		t.Errorf("dry run = %d %+v", code, r)
	}
	if code := get(t, srv, "POST", schema.PathReconcile, &r); code != 200 || r.DryRun {
		t.Errorf("real run = %d %+v", code, r)
	}
	var e schema.Error
	if code := get(t, srv, "POST", schema.PathReconcile+"?dryRun=maybe", &e); code != 400 || e.Error != `bad request: dryRun must be true or false, got "maybe"` {
		t.Errorf("bad dryRun = %d %q", code, e.Error)
	}
	if len(gotDry) != 2 || !gotDry[0] || gotDry[1] {
		t.Errorf("reconcile calls = %v, want [true false]", gotDry)
	}
}

// One read model, one answer: with the pool's last address quarantined
// (a sandbox the store does not record reports it), /v1/pool's totals,
// groups, families and ranges all say free 0. The groups once counted
// free without the quarantine and said 1.
func TestPoolFreeAgreesAcrossGroupsAndFamilies(t *testing.T) {
	store := newStore(t) // .2 to .6
	for _, id := range []string{"a", "b", "c", "d"} {
		if _, err := store.Assign(t.Context(), datastore.Key{Network: "net", SandboxID: id, IfName: "eth0"}, datastore.Pod{Name: id}); err != nil {
			t.Fatal(err)
		}
	}
	ev := datastore.Evidence{Network: "net", IfName: "eth0", At: t0, Listed: map[string]struct{}{"a": {}, "b": {}, "c": {}, "d": {}, "stranger": {}},
		Holdings: []datastore.Holding{{IP: netip.MustParseAddr("198.18.0.6"), SandboxID: "stranger", Source: "runtime"}}}
	if rep, err := store.Observe(t.Context(), ev); err != nil || rep.Quarantined != 1 {
		t.Fatalf("Observe = %+v, %v; want .6 quarantined", rep, err)
	}
	srv := httptest.NewServer(introspect.Handler(introspect.Deps{Store: store, Source: "static", Now: func() time.Time { return t0 }}))
	defer srv.Close()
	var pool schema.Pool
	if code := get(t, srv, "GET", schema.PathPool, &pool); code != 200 {
		t.Fatalf("GET /v1/pool = %d", code)
	}
	if pool.Free != 0 || len(pool.Groups) != 1 || len(pool.Families) != 1 || len(pool.Ranges) != 1 {
		t.Fatalf("pool = %+v", pool)
	}
	if g, f, r := pool.Groups[0].Free, pool.Families[0].Free, pool.Ranges[0].Free; g != 0 || f != 0 || r != 0 {
		t.Fatalf("free: groups %d, families %d, ranges %d; want 0 everywhere (.2-.5 assigned, .6 quarantined)", g, f, r)
	}
	if pool.Families[0].Quarantined != 1 || pool.Groups[0].Assigned != 4 {
		t.Fatalf("pool = %+v, want 4 assigned, 1 quarantined", pool)
	}
}
