package datastore_test

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/sandboxipam/sandboxipam/ipamd/datastore"
	"github.com/sandboxipam/sandboxipam/ipamd/ipsource/static"
)

// BenchmarkAssignReleasePools is one durable ADD+DEL (1 caller) in pools
// of several sizes while the store already holds n assignments: a /24,
// an IPv6 /64 and a /16, half full and nearly full (65,000 of its 65,534
// addresses held). It also reports the snapshot's bytes per assignment.
// The preload is one adoption, as after a lost checkpoint: n single
// Assigns would take minutes of fsyncs.
func BenchmarkAssignReleasePools(b *testing.B) {
	cases := []struct {
		name, cidr, first string
		held              int
	}{
		{"slash24/held=200", "198.18.0.0/24", "198.18.0.1", 200},
		{"slash16/held=10000", "198.18.0.0/16", "198.18.0.1", 10000},
		{"slash16/held=65000", "198.18.0.0/16", "198.18.0.1", 65000},
		{"slash64/held=10000", "2001:db8::/64", "2001:db8::1", 10000},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			ctx := context.Background()
			path := filepath.Join(b.TempDir(), "cp")
			s, err := datastore.Open(ctx, datastore.Options{Path: path, Cooldown: time.Nanosecond, ProveWhenMissing: true})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			cfg, err := static.ParseConfig([]string{c.cidr}, nil, nil)
			if err != nil {
				b.Skip(err) // the pool this build cannot hold
			}
			src, err := static.New(cfg)
			if err != nil {
				b.Skip(err)
			}
			if err := src.Run(ctx, s); err != nil {
				b.Fatal(err)
			}
			sandboxes := runningSandboxes(c.held)
			ip := netip.MustParseAddr(c.first)
			for i := range sandboxes {
				sandboxes[i].IPs = []netip.Addr{ip}
				ip = ip.Next()
			}
			if _, err := s.Observe(ctx, evidence(sandboxes)); err != nil {
				b.Fatal(err)
			}
			if st := s.Stats(); st.Assigned != c.held {
				b.Fatalf("preloaded %d assignments, want %d", st.Assigned, c.held)
			}
			// The adoption was written as a whole snapshot.
			fi, err := os.Stat(path)
			if err != nil {
				b.Fatal(err)
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
			b.ReportMetric(float64(fi.Size())/float64(c.held), "snapshot-B/assignment")
		})
	}
}
