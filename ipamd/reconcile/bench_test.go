package reconcile_test

import (
	"context"
	"fmt"
	"net/netip"
	"path/filepath"
	"testing"
	"time"

	"github.com/sandboxipam/sandboxipam/internal/testadapter"
	"github.com/sandboxipam/sandboxipam/ipamd/datastore"
	"github.com/sandboxipam/sandboxipam/ipamd/ipsource/static"
	"github.com/sandboxipam/sandboxipam/ipamd/reconcile"
	"github.com/sandboxipam/sandboxipam/runtime"
	"github.com/sandboxipam/sandboxipam/runtime/plugin/host"
)

const benchSandboxes = 10000

// benchNode is a store holding 10,000 assignments (adopted in one batch)
// and a runtime listing the same 10,000 sandboxes.
func benchNode(b *testing.B) (*datastore.Store, []runtime.Sandbox, string, *clock) {
	b.Helper()
	ctx := context.Background()
	dir := b.TempDir()
	clk := &clock{now: t0}
	store, err := datastore.Open(ctx, datastore.Options{Path: filepath.Join(dir, "cp"), Now: clk.Now, ProveWhenMissing: true})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = store.Close() })
	cfg, err := static.ParseConfig([]string{"198.18.0.0/18"}, nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	src, err := static.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	if err := src.Run(ctx, store); err != nil {
		b.Fatal(err)
	}
	sandboxes := make([]runtime.Sandbox, benchSandboxes)
	ip := netip.MustParseAddr("198.18.0.1")
	for i := range sandboxes {
		sandboxes[i] = runtime.Sandbox{ID: fmt.Sprintf("%064x", i), Name: fmt.Sprintf("pod-%d", i), Namespace: "default",
			UID: fmt.Sprintf("uid-%d", i), State: runtime.StateReady, CreatedAt: t0, IPs: []netip.Addr{ip}}
		ip = ip.Next()
	}
	if _, err := store.Observe(ctx, evidenceOf(sandboxes, t0)); err != nil {
		b.Fatal(err)
	}
	statePath := filepath.Join(dir, "runtime.json")
	if err := testadapter.WriteState(statePath, testadapter.State{Sandboxes: sandboxes}); err != nil {
		b.Fatal(err)
	}
	return store, sandboxes, statePath, clk
}

// BenchmarkReconcile10000 is one pass over 10,000 assignments and a listing
// of 10,000 sandboxes through the file-backed test adapter (its JSON decode
// included): steady (all present, nothing released) and with half gone
// (5,000 released in one batch, one write); and steady through the real
// plugin subprocess (gRPC over go-plugin, AutoMTLS off).
func BenchmarkReconcile10000(b *testing.B) {
	b.Run("all-present", func(b *testing.B) {
		store, _, statePath, clk := benchNode(b)
		clk.Set(t0.Add(time.Hour))
		r := reconcile.New(store, testadapter.New(statePath), reconcile.Config{Network: "pods", Now: clk.Now, Logger: discard()})
		b.ResetTimer()
		for range b.N {
			res, err := r.RunOnce(context.Background(), false)
			if err != nil || len(res.Released) != 0 || res.Listed != benchSandboxes {
				b.Fatalf("%+v, %v", res, err)
			}
		}
	})
	b.Run("plugin-all-present", func(b *testing.B) {
		store, _, statePath, clk := benchNode(b)
		clk.Set(t0.Add(time.Hour))
		client, err := host.Launch(context.Background(), host.Config{
			Path: testadapter.Build(b), Args: []string{"--state=" + statePath}, Logger: discard(), DisableAutoMTLS: true,
		})
		if err != nil {
			b.Fatal(err)
		}
		defer client.Close()
		r := reconcile.New(store, client, reconcile.Config{Network: "pods", Now: clk.Now, Logger: discard()})
		b.ResetTimer()
		for range b.N {
			res, err := r.RunOnce(context.Background(), false)
			if err != nil || len(res.Released) != 0 || res.Listed != benchSandboxes {
				b.Fatalf("%+v, %v", res, err)
			}
		}
	})
	b.Run("half-gone", func(b *testing.B) {
		store, sandboxes, statePath, clk := benchNode(b)
		if err := testadapter.WriteState(statePath, testadapter.State{Sandboxes: sandboxes[:benchSandboxes/2]}); err != nil {
			b.Fatal(err)
		}
		r := reconcile.New(store, testadapter.New(statePath), reconcile.Config{Network: "pods", Now: clk.Now, Logger: discard()})
		ctx := context.Background()
		b.ResetTimer()
		for i := range b.N {
			clk.Set(t0.Add(time.Duration(i+1) * time.Hour))
			res, err := r.RunOnce(ctx, false)
			if err != nil || len(res.Released) != benchSandboxes/2 {
				b.Fatalf("released %d, %v", len(res.Released), err)
			}
			b.StopTimer()
			// Give the released half back as a CNI ADD would, seen by a
			// listing, for the next round.
			for _, sb := range sandboxes[benchSandboxes/2:] {
				if _, err := store.Assign(ctx, datastore.Key{Network: "pods", SandboxID: sb.ID, IfName: "eth0"}, datastore.Pod{}); err != nil {
					b.Fatal(err)
				}
			}
			if _, err := store.Observe(ctx, evidenceOf(nil, clk.Now(), sandboxes[benchSandboxes/2:]...)); err != nil {
				b.Fatal(err)
			}
			clk.Set(t0.Add(time.Duration(i+1)*time.Hour + 30*time.Minute))
			b.StartTimer()
		}
	})
}
