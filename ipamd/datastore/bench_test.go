package datastore_test

import (
	"context"
	"fmt"
	"net/netip"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sandboxipam/sandboxipam/ipamd/datastore"
	"github.com/sandboxipam/sandboxipam/ipamd/ipsource/static"
	"github.com/sandboxipam/sandboxipam/runtime"
)

// openBench opens a store with a /16 static pool (65,534 addresses) whose
// released addresses cool down for a nanosecond only, so a long run of
// Assign+Release pairs never exhausts the pool with cooling addresses.
func openBench(b *testing.B) *datastore.Store { return openBenchWith(b, false) }

// openBenchWith opens the bench store, unproven (as ipamd starts without a
// checkpoint) when proveWhenMissing is set.
func openBenchWith(b *testing.B, proveWhenMissing bool) *datastore.Store {
	b.Helper()
	ctx := context.Background()
	s, err := datastore.Open(ctx, datastore.Options{Path: filepath.Join(b.TempDir(), "cp"), Cooldown: time.Nanosecond,
		ProveWhenMissing: proveWhenMissing})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Close() })
	cfg, err := static.ParseConfig([]string{"198.18.0.0/16"}, nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	src, err := static.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	if err := src.Run(ctx, s); err != nil {
		b.Fatal(err)
	}
	return s
}

// BenchmarkAssignRelease is one CNI ADD and its DEL through the store, two
// durable writes, with 1, 8 and 64 concurrent callers sharing fsyncs.
func BenchmarkAssignRelease(b *testing.B) {
	for _, callers := range []int{1, 8, 64} {
		b.Run(fmt.Sprintf("callers=%d", callers), func(b *testing.B) {
			s := openBench(b)
			ctx := context.Background()
			var next atomic.Int64
			b.SetParallelism((callers + 1) / 2) // RunParallel runs this times GOMAXPROCS (2) goroutines
			if callers == 1 {
				b.SetParallelism(1)
			}
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					k := datastore.Key{Network: "pods", SandboxID: fmt.Sprintf("sb-%d", next.Add(1)), IfName: "eth0"}
					if _, err := s.Assign(ctx, k, datastore.Pod{Name: k.SandboxID}); err != nil {
						b.Error(err)
						return
					}
					if _, _, err := s.Release(ctx, k); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}

// runningSandboxes lists n sandboxes holding 198.18.0.1 onwards, with the
// 64-hex IDs and pod metadata of real ones.
func runningSandboxes(n int) []runtime.Sandbox {
	sandboxes := make([]runtime.Sandbox, n)
	ip := netip.MustParseAddr("198.18.0.1")
	for i := range sandboxes {
		sandboxes[i] = runtime.Sandbox{ID: fmt.Sprintf("%064x", i), Name: fmt.Sprintf("web-%d", i), Namespace: "default",
			UID: fmt.Sprintf("8f3c2a1e-0278-11ea-9fc6-%012x", i), State: runtime.StateReady, IPs: []netip.Addr{ip}}
		ip = ip.Next()
	}
	return sandboxes
}

// BenchmarkAssignWithLoadedStore is one ADD+DEL while the store already
// holds n assignments, so each write carries the whole state.
func BenchmarkAssignWithLoadedStore(b *testing.B) {
	for _, n := range []int{250, 10000} {
		b.Run(fmt.Sprintf("assignments=%d", n), func(b *testing.B) {
			s := openBenchWith(b, true)
			ctx := context.Background()
			// Preload in one batch, as adoption after a lost checkpoint
			// does: n single Assigns would write n growing files first.
			if _, err := s.Observe(ctx, evidence(runningSandboxes(n))); err != nil {
				b.Fatal(err)
			}
			if st := s.Stats(); st.Assigned != n {
				b.Fatalf("preloaded %d assignments, want %d", st.Assigned, n)
			}
			b.ResetTimer()
			for i := range b.N {
				k := datastore.Key{Network: "pods", SandboxID: fmt.Sprintf("sb-%d", i), IfName: "eth0"}
				if _, err := s.Assign(ctx, k, datastore.Pod{}); err != nil {
					b.Fatal(err)
				}
				if _, _, err := s.Release(ctx, k); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
