package datastore_test

import (
	"context"
	"net/netip"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/sandboxipam/sandboxipam/ipamd/datastore"
)

// TestGenerateV1 writes testdata/v1 with the v1 code (run once with
// GEN_V1=1 before the v2 format).
func TestGenerateV1(t *testing.T) {
	if os.Getenv("GEN_V1") == "" {
		t.Skip("generator")
	}
	dir, _ := filepath.Abs("testdata/v1")
	path := filepath.Join(dir, "ipamd.checkpoint")
	clk := newClock()
	ctx := context.Background()
	s, err := datastore.Open(ctx, datastore.Options{Path: path, Now: clk.Now, Cooldown: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{t: t, cidrs: []string{"198.18.0.0/24"}}
	f.fill(s)
	// The first commit compacts (snapshot); the rest are journal records.
	mustAssign(t, s, key("sb-a"), pod("a"), "198.18.0.1")
	mustAssign(t, s, key("sb-b"), pod("b"), "198.18.0.2")
	mustAssign(t, s, key("sb-c"), pod("c"), "198.18.0.3")
	// sb-d's commit compacts: the snapshot holds a to d; the rest are
	// journal records after it.
	datastore.SetCompactBytes(s, 0)
	clk.Advance(time.Second)
	mustAssign(t, s, key("sb-d"), pod("d"), "198.18.0.4")
	datastore.SetCompactBytes(s, 1<<20)
	mustRelease(t, s, key("sb-b"), "198.18.0.2")
	if _, err := s.Observe(ctx, datastore.Evidence{Network: "pods", IfName: "eth0", At: clk.Now(),
		Listed:   map[string]struct{}{"sb-a": {}, "sb-c": {}, "sb-d": {}},
		Holdings: []datastore.Holding{{IP: netip.MustParseAddr("198.18.0.9"), SandboxID: "sb-stranger", Ready: true, Source: "runtime"}}}); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Second)
	mustAssign(t, s, key("sb-e"), pod("e"), "198.18.0.5")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	_ = os.Remove(path + ".lock")
}
