package client_test

import (
	"bytes"
	"context"
	"errors"
	"net/netip"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sandboxipam/sandboxipam/ipamd/adminsock"
	"github.com/sandboxipam/sandboxipam/ipamd/datastore"
	"github.com/sandboxipam/sandboxipam/ipamd/introspect"
	"github.com/sandboxipam/sandboxipam/ipamd/introspect/client"
	"github.com/sandboxipam/sandboxipam/ipamd/introspect/schema"
	"github.com/sandboxipam/sandboxipam/ipamd/ipsource/static"
	"github.com/sandboxipam/sandboxipam/ipamd/reconcile"
	"github.com/sandboxipam/sandboxipam/ipamd/server"
)

var t0 = time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)

// newIpamd serves the real introspection handler over a real datastore
// holding one assignment.
func newIpamd(t *testing.T, rec func(context.Context, bool) (reconcile.Result, error)) (*client.Client, datastore.Assignment) {
	t.Helper()
	ctx := context.Background()
	store, err := datastore.Open(ctx, datastore.Options{Path: filepath.Join(t.TempDir(), "ck"), Now: func() time.Time { return t0 }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	src, _ := static.New(static.Config{CIDRs: []netip.Prefix{netip.MustParsePrefix("198.18.0.0/29")}})
	if err := src.Run(ctx, store); err != nil {
		t.Fatal(err)
	}
	a, err := store.Assign(ctx, datastore.Key{Network: "net", SandboxID: "c32c237fb529", IfName: "eth0"},
		datastore.Pod{Name: "coredns", Namespace: "kube-system", UID: "83eeac05"})
	if err != nil {
		t.Fatal(err)
	}
	// The admin socket, as ipamd serves it: reads, and reconcile.
	path := filepath.Join(t.TempDir(), "admin.sock")
	l, err := server.Listen(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	srv := adminsock.Serve(l, introspect.AdminHandler(introspect.Deps{Store: store, Source: "static", Reconcile: rec,
		Now: func() time.Time { return t0.Add(2 * time.Minute) }}), nil)
	t.Cleanup(func() { _ = srv.Shutdown(context.Background()) })
	return client.NewAdmin(path), a
}

func TestPodsTable(t *testing.T) {
	c, _ := newIpamd(t, nil)
	pods, err := c.Pods(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := client.RenderPods(&out, pods); err != nil {
		t.Fatal(err)
	}
	want := "SANDBOX ID    NETWORK  IFNAME  POD                  UID       IP             AGE\n" +
		"c32c237fb529  net      eth0    kube-system/coredns  83eeac05  198.18.0.1/29  2m0s\n" +
		"1 assignment(s)\n"
	if out.String() != want {
		t.Errorf("pods table =\n%s\nwant\n%s", out.String(), want)
	}
}

func TestPoolTable(t *testing.T) {
	c, _ := newIpamd(t, nil)
	pool, err := c.Pool(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := client.RenderPool(&out, pool); err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{"source:      static", "static  6      1         0        5", "all     6      1         0        5"} {
		if !strings.Contains(out.String(), line) {
			t.Errorf("pool table lacks %q:\n%s", line, out.String())
		}
	}
}

func TestReconcileDryRunRendering(t *testing.T) {
	// The pass reports the store's own assignment as releasable.
	var held datastore.Assignment
	c, held := newIpamd(t, func(_ context.Context, dryRun bool) (reconcile.Result, error) {
		return reconcile.Result{At: t0, DryRun: dryRun, Listed: 0, Released: []datastore.Assignment{held}}, nil
	})
	res, err := c.Reconcile(t.Context(), true)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := client.RenderReconcile(&out, res); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out.String(), "at 2026-12-02T12:00:00Z: listed 0 sandbox(es), adopted 0, would release 1\n") ||
		!strings.Contains(out.String(), "c32c237fb529  net      eth0    kube-system/coredns  83eeac05  198.18.0.1/29") {
		t.Errorf("dry run rendering:\n%s", out.String())
	}
}

func TestFailedPassAndNoAdapter(t *testing.T) {
	c, _ := newIpamd(t, func(context.Context, bool) (reconcile.Result, error) {
		return reconcile.Result{At: t0, Err: "list sandboxes: runtime unavailable"}, errors.New("list sandboxes: runtime unavailable")
	})
	res, err := c.Reconcile(t.Context(), false)
	var apiErr *client.APIError
	if !errors.As(err, &apiErr) || apiErr.Status != 502 || res.Error != "list sandboxes: runtime unavailable" {
		t.Fatalf("failed pass = %+v, %v", res, err)
	}
	none, _ := newIpamd(t, nil)
	if _, err := none.Adapter(t.Context()); !errors.As(err, &apiErr) || apiErr.Status != 503 {
		t.Fatalf("adapter without one = %v, want 503", err)
	}
	var out bytes.Buffer
	if err := client.RenderAdapter(&out, schema.Adapter{Name: "containerd", Binary: "/opt/adapters/containerd",
		Health: schema.Health{State: "healthy", Healthy: true, PID: 42, Restarts: 1}}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "health:          healthy (pid 42, 1 restart(s)") || !strings.Contains(out.String(), "no reconcile pass yet") {
		t.Errorf("adapter rendering:\n%s", out.String())
	}
}
