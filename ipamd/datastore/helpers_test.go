package datastore_test

import (
	"context"
	"net/netip"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/sandboxipam/sandboxipam/ipamd/datastore"
	"github.com/sandboxipam/sandboxipam/ipamd/ipsource/static"
)

// clock is a settable clock, so cooldown tests never sleep.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func newClock() *clock {
	return &clock{now: time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)}
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// fixture is a store over a checkpoint in a test directory, with its pool
// filled by the real static source.
type fixture struct {
	t     *testing.T
	path  string
	clock *clock
	cidrs []string
	// proveWhenMissing opens as ipamd does: no checkpoint is unproven.
	proveWhenMissing bool
	// cooldown is Options.Cooldown; zero is the default.
	cooldown time.Duration
}

func newFixture(t *testing.T, cidrs ...string) *fixture {
	t.Helper()
	return &fixture{t: t, path: filepath.Join(t.TempDir(), "state", "ipamd.checkpoint"), clock: newClock(), cidrs: cidrs}
}

// open opens the store and adds the static pool, as ipamd does at start.
func (f *fixture) open() *datastore.Store {
	f.t.Helper()
	s, err := datastore.Open(context.Background(), datastore.Options{Path: f.path, Now: f.clock.Now, Logger: testLogger(f.t), ProveWhenMissing: f.proveWhenMissing,
		Cooldown: f.cooldown})
	if err != nil {
		f.t.Fatalf("Open: %v", err)
	}
	f.t.Cleanup(func() { _ = s.Close() })
	f.fill(s)
	return s
}

func (f *fixture) fill(s *datastore.Store) {
	f.t.Helper()
	if len(f.cidrs) == 0 {
		return
	}
	cfg, err := static.ParseConfig(f.cidrs, nil, nil)
	if err != nil {
		f.t.Fatal(err)
	}
	src, err := static.New(cfg)
	if err != nil {
		f.t.Fatal(err)
	}
	if err := src.Run(context.Background(), s); err != nil {
		f.t.Fatalf("static source: %v", err)
	}
}

// reopen closes s and opens the checkpoint again.
func (f *fixture) reopen(s *datastore.Store) *datastore.Store {
	f.t.Helper()
	if err := s.Close(); err != nil {
		f.t.Fatalf("Close: %v", err)
	}
	return f.open()
}

func key(sandbox string) datastore.Key {
	return datastore.Key{Network: "pods", SandboxID: sandbox, IfName: "eth0"}
}

func pod(name string) datastore.Pod {
	return datastore.Pod{Name: name, Namespace: "default", UID: "uid-" + name}
}

// mustAssign assigns and checks the exact address.
func mustAssign(t *testing.T, s *datastore.Store, k datastore.Key, p datastore.Pod, want string) datastore.Assignment {
	t.Helper()
	a, err := s.Assign(context.Background(), k, p)
	if err != nil {
		t.Fatalf("Assign(%s): %v", k.SandboxID, err)
	}
	if a.Address.IP != netip.MustParseAddr(want) {
		t.Fatalf("Assign(%s) = %s, want %s", k.SandboxID, a.Address.IP, want)
	}
	return a
}

func mustRelease(t *testing.T, s *datastore.Store, k datastore.Key, want string) {
	t.Helper()
	a, found, err := s.Release(context.Background(), k)
	if err != nil || !found {
		t.Fatalf("Release(%s) = found %v, err %v", k.SandboxID, found, err)
	}
	if a.Address.IP != netip.MustParseAddr(want) {
		t.Fatalf("Release(%s) freed %s, want %s", k.SandboxID, a.Address.IP, want)
	}
}

// ipsOf maps sandbox ID to address for compact comparisons.
func ipsOf(as []datastore.Assignment) map[string]string {
	m := make(map[string]string, len(as))
	for _, a := range as {
		m[a.SandboxID+"/"+a.Network+"/"+a.IfName] = a.Address.IP.String()
	}
	return m
}
