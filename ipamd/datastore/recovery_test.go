package datastore_test

import (
	"bytes"
	"context"
	"errors"
	"maps"
	"net/netip"
	"os"
	"strings"
	"testing"
	"time"

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
			if r.Checkpoint != datastore.RecoveryCorrupt || r.Assignments != 0 || r.Quarantined != 6 || r.Detail == "" {
				t.Fatalf("Recovery = %+v, want corrupt with 6 unproven addresses", r)
			}
			kept, err := os.ReadFile(corruptedAside(t, f))
			if err != nil || !bytes.Equal(kept, bad) {
				t.Fatalf("damaged file not kept aside byte for byte: %v", err)
			}
			if _, err := s.Assign(context.Background(), key("c"), pod("c")); !errors.Is(err, datastore.ErrUnproven) {
				t.Fatalf("Assign before Adopt: err = %v, want ErrUnproven", err)
			}
			if st := s.Stats(); st != (datastore.Stats{Total: 6, Quarantined: 6}) {
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

// evidence is what the reconciler makes of a listing whose sandboxes
// report their IPs; unaccounted lists what nothing showed.
func evidence(sandboxes []runtime.Sandbox, unaccounted ...string) datastore.Evidence {
	ev := datastore.Evidence{Network: "pods", IfName: "eth0", At: time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC),
		Listed: map[string]struct{}{}, Unaccounted: unaccounted}
	for _, sb := range sandboxes {
		if sb.HostNetwork {
			continue
		}
		ev.Listed[sb.ID] = struct{}{}
		for _, ip := range sb.IPs {
			ev.Holdings = append(ev.Holdings, datastore.Holding{IP: ip, SandboxID: sb.ID, Ready: sb.State == runtime.StateReady,
				Pod: datastore.Pod{Name: sb.Name, Namespace: sb.Namespace, UID: sb.UID}, Source: "runtime"})
		}
	}
	return ev
}

func observe(t *testing.T, s *datastore.Store, ev datastore.Evidence) datastore.ObserveReport {
	t.Helper()
	rep, err := s.Observe(context.Background(), ev)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

func TestObserveAccountingForEveryPodProvesThePool(t *testing.T) {
	f := newFixture(t, "198.18.0.0/29")
	s := lose(t, f)
	rep := observe(t, s, evidence(listing()))
	if rep.Adopted != 2 || rep.ProvenFree != 4 || !rep.Proven || rep.Conflicts != 0 || rep.Quarantined != 0 {
		t.Fatalf("ObserveReport = %+v", rep)
	}
	want := map[string]string{"a/pods/eth0": "198.18.0.1", "b/pods/eth0": "198.18.0.2"}
	if got := ipsOf(s.Assignments()); !maps.Equal(got, want) {
		t.Fatalf("adopted %v, want %v", got, want)
	}
	if a, _ := s.Lookup(key("b")); a.Pod != (datastore.Pod{Name: "b", Namespace: "default", UID: "uid-b"}) || a.ListedAt.IsZero() {
		t.Fatalf("adopted assignment = %+v, want pod b, seen by the listing", a)
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
	if a, _ := s.Lookup(key("b")); a.ListedAt.IsZero() {
		t.Fatal("ListedAt was not kept across the restart")
	}
	mustAssign(t, s, key("d"), pod("d"), "198.18.0.4")
}

// A pod whose address nothing shows keeps the whole pool unproven, and
// the refusal names it.
func TestObserveWithAnUnaccountedPodStaysUnproven(t *testing.T) {
	f := newFixture(t, "198.18.0.0/29")
	s := lose(t, f)
	rep := observe(t, s, evidence(listing(), "sandbox stopped (default/s): no IPs reported, no veth on the node"))
	if rep.Adopted != 2 || rep.Proven || rep.Quarantined != 4 {
		t.Fatalf("ObserveReport = %+v", rep)
	}
	_, err := s.Assign(context.Background(), key("c"), pod("c"))
	if !errors.Is(err, datastore.ErrUnproven) || !strings.Contains(err.Error(), "sandbox stopped (default/s)") {
		t.Fatalf("Assign while a pod is unaccounted: %v, want ErrUnproven naming sandbox stopped", err)
	}
	if p := s.Proof(); !p.Unproven || p.Quarantined != 4 || len(p.Waiting) != 1 {
		t.Fatalf("Proof = %+v", p)
	}
	// Still unproven after a restart: a crash now must not start clean.
	s = f.reopen(s)
	if !s.Unproven() {
		t.Fatal("store forgot it is unproven")
	}
	if st := s.Stats(); st != (datastore.Stats{Total: 6, Assigned: 2, Quarantined: 4}) {
		t.Fatalf("Stats after reopen = %+v", st)
	}
	rep = observe(t, s, evidence(listing()))
	if rep.Adopted != 0 || rep.ProvenFree != 4 || !rep.Proven {
		t.Fatalf("second Observe = %+v", rep)
	}
	mustAssign(t, s, key("c"), pod("c"), "198.18.0.3")
}

// With no checkpoint at all, a listing without pods proves a first start;
// nothing is handed out before it.
func TestMissingCheckpointIsProvenByAnEmptyListing(t *testing.T) {
	f := newFixture(t, "198.18.0.0/29")
	f.proveWhenMissing = true
	s := f.open()
	if r := s.Recovery(); r.Checkpoint != datastore.RecoveryMissing || !s.Unproven() {
		t.Fatalf("Recovery = %+v, unproven %v; want missing and unproven", r, s.Unproven())
	}
	if _, err := s.Assign(context.Background(), key("a"), pod("a")); !errors.Is(err, datastore.ErrUnproven) ||
		!strings.Contains(err.Error(), "a successful runtime listing") {
		t.Fatalf("Assign before any listing: %v, want ErrUnproven waiting for a listing", err)
	}
	host := []runtime.Sandbox{{ID: "host", State: runtime.StateReady, HostNetwork: true}}
	if rep := observe(t, s, evidence(host)); !rep.Proven || rep.ProvenFree != 6 {
		t.Fatalf("ObserveReport = %+v", rep)
	}
	mustAssign(t, s, key("a"), pod("a"), "198.18.0.1")
}

func TestObserveKeepsAnIPOutsideThePool(t *testing.T) {
	f := newFixture(t, "198.18.0.0/30")
	s := lose(t, f)
	foreign := []runtime.Sandbox{{ID: "x", Name: "x", Namespace: "default", State: runtime.StateReady,
		IPs: []netip.Addr{netip.MustParseAddr("198.18.0.9")}}}
	observe(t, s, evidence(foreign))
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

// A stopped sandbox may still report an address it gave back and that a
// running pod now holds: the running pod is adopted, and the address stays
// quarantined (never handed out again after its holder leaves) while the
// stopped sandbox still claims it.
func TestObserveAdoptsTheRunningClaimantAndQuarantinesTheStaleOne(t *testing.T) {
	f := newFixture(t, "198.18.0.0/29")
	s := lose(t, f)
	ip := []netip.Addr{netip.MustParseAddr("198.18.0.2")}
	sandboxes := []runtime.Sandbox{
		{ID: "old", Name: "old", Namespace: "default", State: runtime.StateNotReady, IPs: ip},
		{ID: "new", Name: "new", Namespace: "default", State: runtime.StateReady, IPs: ip},
	}
	rep := observe(t, s, evidence(sandboxes))
	if rep.Adopted != 1 || rep.Conflicts != 1 || !rep.Proven {
		t.Fatalf("ObserveReport = %+v", rep)
	}
	if got, want := ipsOf(s.Assignments()), map[string]string{"new/pods/eth0": "198.18.0.2"}; !maps.Equal(got, want) {
		t.Fatalf("assignments %v, want %v", got, want)
	}
	mustRelease(t, s, key("new"), "198.18.0.2")
	f.clock.Advance(time.Hour) // past the cooldown
	for _, want := range []string{"198.18.0.1", "198.18.0.3", "198.18.0.4", "198.18.0.5", "198.18.0.6"} {
		mustAssign(t, s, key("p"+want), pod("p"), want)
	}
	if _, err := s.Assign(context.Background(), key("q"), pod("q")); !errors.Is(err, datastore.ErrPoolExhausted) {
		t.Fatalf("Assign = %v; want exhausted: 198.18.0.2 is claimed by the stopped sandbox", err)
	}
	// Once the stopped sandbox is gone, the address is free again.
	rep = observe(t, s, evidence(nil))
	if rep.ProvenFree != 1 || rep.Quarantined != 0 {
		t.Fatalf("ObserveReport after the stale claimant left = %+v", rep)
	}
	mustAssign(t, s, key("q"), pod("q"), "198.18.0.2")
}

// On a trusted store, an address a listed sandbox holds while the store
// has it free or under another key is quarantined and counted, never
// handed out (a cut journal or a wrong release could cause it).
func TestObserveQuarantinesAddressesTheStoreDoesNotRecordUnderTheirHolder(t *testing.T) {
	f := newFixture(t, "198.18.0.0/30")
	s := f.open()
	mustAssign(t, s, key("a"), pod("a"), "198.18.0.1")
	ghost := []runtime.Sandbox{
		{ID: "a", State: runtime.StateReady, IPs: []netip.Addr{netip.MustParseAddr("198.18.0.1")}},
		{ID: "ghost", State: runtime.StateReady, IPs: []netip.Addr{netip.MustParseAddr("198.18.0.2")}},
		{ID: "thief", State: runtime.StateReady, IPs: []netip.Addr{netip.MustParseAddr("198.18.0.1")}},
	}
	rep := observe(t, s, evidence(ghost))
	if rep.Conflicts != 2 || rep.Quarantined != 2 || rep.Adopted != 0 || rep.Confirmed != 1 {
		t.Fatalf("ObserveReport = %+v, want .1 and .2 quarantined, a confirmed", rep)
	}
	// .2 is never handed out; .1 stays quarantined after a releases it.
	mustRelease(t, s, key("a"), "198.18.0.1")
	f.clock.Advance(time.Hour)
	if _, err := s.Assign(context.Background(), key("b"), pod("b")); !errors.Is(err, datastore.ErrPoolExhausted) {
		t.Fatalf("Assign = %v, want exhausted (.1 and .2 quarantined)", err)
	}
	// The quarantine is on disk.
	s = f.reopen(s)
	if st := s.Stats(); st.Quarantined != 2 {
		t.Fatalf("Stats after reopen = %+v, want 2 quarantined", st)
	}
	if rep := observe(t, s, evidence(nil)); rep.ProvenFree != 2 {
		t.Fatalf("ObserveReport once the claimants left = %+v", rep)
	}
	mustAssign(t, s, key("b"), pod("b"), "198.18.0.2")
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

// A DEL that arrives while a listing is in flight wins: the listing, which
// started before it, does not adopt the sandbox back; its address stays
// quarantined until a listing no longer shows the sandbox.
func TestObserveDoesNotAdoptASandboxDeletedAfterTheListingStarted(t *testing.T) {
	f := newFixture(t, "198.18.0.0/29")
	s := lose(t, f)
	ev := evidence(listing()) // lists a (.1) and b (.2)
	ev.At = f.clock.Now()
	f.clock.Advance(time.Second)
	if _, found, err := s.Release(context.Background(), key("a")); err != nil || found {
		t.Fatalf("DEL of a while unproven = %v, %v; want nothing to release", found, err)
	}
	rep := observe(t, s, ev)
	if rep.Adopted != 1 || rep.Quarantined != 1 || rep.ProvenFree != 4 || !rep.Proven {
		t.Fatalf("ObserveReport = %+v; want b adopted, a's .1 quarantined", rep)
	}
	if got := ipsOf(s.Assignments()); !maps.Equal(got, map[string]string{"b/pods/eth0": "198.18.0.2"}) {
		t.Fatalf("assignments %v; a's DEL came after the listing started", got)
	}
	ev = evidence(listing()[1:])
	ev.At = f.clock.Now()
	if rep := observe(t, s, ev); rep.ProvenFree != 1 {
		t.Fatalf("ObserveReport once a is gone = %+v", rep)
	}
}
