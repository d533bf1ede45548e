package datastore_test

import (
	"bytes"
	"context"
	"errors"
	"maps"
	"net/netip"
	"os"
	"testing"

	"github.com/sandboxipam/sandboxipam/ipamd/datastore"
	"github.com/sandboxipam/sandboxipam/runtime"
)

// damage returns the ways a checkpoint gets lost.
func damage() map[string]func([]byte) []byte {
	return map[string]func([]byte) []byte{
		"torn": func(b []byte) []byte { return b[:len(b)*2/3] },
		"garbage": func([]byte) []byte {
			return []byte("\x00\x01 not a checkpoint at all")
		},
		"bit flipped": func(b []byte) []byte {
			out := bytes.Clone(b)
			out[len(out)-10] ^= 0x04
			return out
		},
		"empty": func([]byte) []byte { return nil },
	}
}

func TestDamagedCheckpointStartsUnproven(t *testing.T) {
	for name, damageFn := range damage() {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, "198.18.0.0/29")
			s := f.open()
			mustAssign(t, s, key("a"), pod("a"), "198.18.0.1")
			mustAssign(t, s, key("b"), pod("b"), "198.18.0.2")
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			good, err := os.ReadFile(f.path)
			if err != nil {
				t.Fatal(err)
			}
			bad := damageFn(good)
			if err := os.WriteFile(f.path, bad, 0o600); err != nil {
				t.Fatal(err)
			}

			s = f.open()
			r := s.Recovery()
			if r.Checkpoint != datastore.RecoveryCorrupt || r.Assignments != 0 || r.Unproven != 6 || r.Detail == "" {
				t.Fatalf("Recovery = %+v, want corrupt with 6 unproven addresses", r)
			}
			kept, err := os.ReadFile(corruptedAside(t, f))
			if err != nil || !bytes.Equal(kept, bad) {
				t.Fatalf("damaged file not kept aside byte for byte: %v", err)
			}
			if _, err := s.Assign(context.Background(), key("c"), pod("c")); !errors.Is(err, datastore.ErrUnproven) {
				t.Fatalf("Assign before Adopt: err = %v, want ErrUnproven", err)
			}
			if st := s.Stats(); st != (datastore.Stats{Total: 6, Unproven: 6}) {
				t.Fatalf("Stats = %+v", st)
			}
		})
	}
}

func listing() []runtime.Sandbox {
	return []runtime.Sandbox{
		{ID: "a", Name: "a", Namespace: "default", UID: "uid-a", State: runtime.StateReady, IPs: []netip.Addr{netip.MustParseAddr("198.18.0.1")}},
		{ID: "b", Name: "b", Namespace: "default", UID: "uid-b", State: runtime.StateNotReady, IPs: []netip.Addr{netip.MustParseAddr("198.18.0.2")}},
		{ID: "host", Name: "kube-proxy", Namespace: "kube-system", State: runtime.StateReady, HostNetwork: true},
	}
}

// lose damages the checkpoint of a store holding a and b, and reopens.
func lose(t *testing.T, f *fixture) *datastore.Store {
	t.Helper()
	s := f.open()
	mustAssign(t, s, key("a"), pod("a"), "198.18.0.1")
	mustAssign(t, s, key("b"), pod("b"), "198.18.0.2")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(f.path, []byte("garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	return f.open()
}

func TestAdoptCompleteListingProvesThePool(t *testing.T) {
	f := newFixture(t, "198.18.0.0/29")
	s := lose(t, f)
	rep, err := s.Adopt(context.Background(), "pods", "eth0", listing(), true)
	if err != nil {
		t.Fatal(err)
	}
	if rep != (datastore.AdoptReport{Adopted: 2, ProvenFree: 4, Proven: true}) {
		t.Fatalf("AdoptReport = %+v", rep)
	}
	want := map[string]string{"a/pods/eth0": "198.18.0.1", "b/pods/eth0": "198.18.0.2"}
	if got := ipsOf(s.Assignments()); !maps.Equal(got, want) {
		t.Fatalf("adopted %v, want %v", got, want)
	}
	if a, _ := s.Lookup(key("b")); a.Pod != pod("b") {
		t.Fatalf("adopted pod = %+v", a.Pod)
	}
	// The adopted addresses are never handed out again.
	mustAssign(t, s, key("c"), pod("c"), "198.18.0.3")
	// A DEL for an adopted sandbox finds it by the real sandbox ID.
	mustRelease(t, s, key("a"), "198.18.0.1")
	// Proven state survives a restart.
	s = f.reopen(s)
	if s.Unproven() || s.Recovery().Checkpoint != datastore.RecoveryLoaded {
		t.Fatalf("after reopen: unproven %v, %+v", s.Unproven(), s.Recovery())
	}
	mustAssign(t, s, key("d"), pod("d"), "198.18.0.4")
}

func TestAdoptIncompleteListingKeepsQuarantine(t *testing.T) {
	f := newFixture(t, "198.18.0.0/29")
	s := lose(t, f)
	sandboxes := append(listing(), runtime.Sandbox{ID: "stopped", Name: "s", Namespace: "default", State: runtime.StateNotReady})
	rep, err := s.Adopt(context.Background(), "pods", "eth0", sandboxes, false)
	if err != nil {
		t.Fatal(err)
	}
	if rep != (datastore.AdoptReport{Adopted: 2, Quarantined: 4}) {
		t.Fatalf("AdoptReport = %+v", rep)
	}
	if _, err := s.Assign(context.Background(), key("c"), pod("c")); !errors.Is(err, datastore.ErrUnproven) {
		t.Fatalf("Assign after an incomplete Adopt: %v, want ErrUnproven", err)
	}
	// Still unproven after a restart: a crash now must not start clean.
	s = f.reopen(s)
	if !s.Unproven() {
		t.Fatal("store forgot it is unproven")
	}
	if st := s.Stats(); st != (datastore.Stats{Total: 6, Assigned: 2, Unproven: 4}) {
		t.Fatalf("Stats after reopen = %+v", st)
	}
	rep, err = s.Adopt(context.Background(), "pods", "eth0", listing(), true)
	if err != nil || rep != (datastore.AdoptReport{Known: 2, ProvenFree: 4, Proven: true}) {
		t.Fatalf("second Adopt = %+v, %v", rep, err)
	}
	mustAssign(t, s, key("c"), pod("c"), "198.18.0.3")
}

func TestAdoptKeepsAnIPOutsideThePool(t *testing.T) {
	f := newFixture(t, "198.18.0.0/30")
	s := lose(t, f)
	foreign := []runtime.Sandbox{{ID: "x", Name: "x", Namespace: "default", State: runtime.StateReady,
		IPs: []netip.Addr{netip.MustParseAddr("198.18.0.9")}}}
	if _, err := s.Adopt(context.Background(), "pods", "eth0", foreign, true); err != nil {
		t.Fatal(err)
	}
	// The pool grows to include it later: it is held, never handed out.
	f.cidrs = []string{"198.18.0.8/30"}
	f.fill(s)
	mustAssign(t, s, key("y"), pod("y"), "198.18.0.1")
	mustAssign(t, s, key("z"), pod("z"), "198.18.0.2")
	mustAssign(t, s, key("w"), pod("w"), "198.18.0.10")
	if _, err := s.Assign(context.Background(), key("v"), pod("v")); !errors.Is(err, datastore.ErrPoolExhausted) {
		t.Fatalf("err = %v; 198.18.0.9 is held by x", err)
	}
}

func TestUnreadableCheckpointIsNotMistakenForMissing(t *testing.T) {
	f := newFixture(t, "198.18.0.0/29")
	s := f.open()
	mustAssign(t, s, key("a"), pod("a"), "198.18.0.1")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// A directory where the file should be cannot be read as a file.
	if err := os.Remove(f.path); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(f.path, 0o700); err != nil {
		t.Fatal(err)
	}
	s = f.open()
	if r := s.Recovery(); r.Checkpoint != datastore.RecoveryCorrupt || !s.Unproven() {
		t.Fatalf("Recovery = %+v, want corrupt and unproven", r)
	}
	if info, err := os.Stat(corruptedAside(t, f)); err != nil || !info.IsDir() {
		t.Fatalf("unreadable checkpoint not kept aside: %v", err)
	}
}
