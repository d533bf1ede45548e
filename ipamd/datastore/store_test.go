package datastore_test

import (
	"context"
	"errors"
	"maps"
	"net/netip"
	"reflect"
	"testing"
	"time"

	"github.com/sandboxipam/sandboxipam/ipamd/datastore"
	"github.com/sandboxipam/sandboxipam/ipamd/ipsource"
)

func TestAssignHandsOutAddressesRoundRobin(t *testing.T) {
	f := newFixture(t, "198.18.0.0/29") // .1 to .6 usable
	s := f.open()
	mustAssign(t, s, key("a"), pod("a"), "198.18.0.1")
	mustAssign(t, s, key("b"), pod("b"), "198.18.0.2")
	mustAssign(t, s, key("c"), pod("c"), "198.18.0.3")
	mustRelease(t, s, key("b"), "198.18.0.2")
	f.clock.Advance(time.Hour) // .2 is cooled down, yet not reused first
	mustAssign(t, s, key("d"), pod("d"), "198.18.0.4")
	mustAssign(t, s, key("e"), pod("e"), "198.18.0.5")
	mustAssign(t, s, key("f"), pod("f"), "198.18.0.6")
	mustAssign(t, s, key("g"), pod("g"), "198.18.0.2") // wrapped around
	if _, err := s.Assign(context.Background(), key("h"), pod("h")); !errors.Is(err, datastore.ErrPoolExhausted) {
		t.Fatalf("Assign on a full pool: err = %v, want ErrPoolExhausted", err)
	}
	want := datastore.Stats{Total: 6, Assigned: 6}
	if got := s.Stats(); got != want {
		t.Fatalf("Stats = %+v, want %+v", got, want)
	}
}

func TestAssignReportsSubnetAndGroup(t *testing.T) {
	f := newFixture(t, "198.18.4.0/30")
	s := f.open()
	a := mustAssign(t, s, key("a"), pod("a"), "198.18.4.1")
	want := ipsource.Address{IP: netip.MustParseAddr("198.18.4.1"), Subnet: netip.MustParsePrefix("198.18.4.0/30"), Group: "static"}
	if a.Address != want {
		t.Fatalf("Address = %+v, want %+v", a.Address, want)
	}
	if a.Pod != pod("a") || a.Key != key("a") || !a.AssignedAt.Equal(f.clock.Now()) {
		t.Fatalf("assignment = %+v", a)
	}
}

func TestAssignSameKeyIsIdempotent(t *testing.T) {
	s := newFixture(t, "198.18.0.0/29").open()
	first := mustAssign(t, s, key("a"), pod("a"), "198.18.0.1")
	again := mustAssign(t, s, key("a"), pod("a"), "198.18.0.1")
	if !reflect.DeepEqual(again, first) {
		t.Fatalf("repeated ADD = %+v, want %+v", again, first)
	}
	if got := s.Stats(); got.Assigned != 1 || got.Free != 5 {
		t.Fatalf("Stats = %+v, want 1 assigned, 5 free", got)
	}
}

func TestAssignRejectsIncompleteKey(t *testing.T) {
	s := newFixture(t, "198.18.0.0/29").open()
	for _, k := range []datastore.Key{{SandboxID: "a", IfName: "eth0"}, {Network: "pods", IfName: "eth0"}, {Network: "pods", SandboxID: "a"}} {
		if _, err := s.Assign(context.Background(), k, pod("a")); !errors.Is(err, datastore.ErrInvalidKey) {
			t.Errorf("Assign(%+v): err = %v, want ErrInvalidKey", k, err)
		}
	}
}

func TestReleaseUnknownKeySucceeds(t *testing.T) {
	s := newFixture(t, "198.18.0.0/29").open()
	mustAssign(t, s, key("a"), pod("a"), "198.18.0.1")
	a, found, err := s.Release(context.Background(), key("never-added"))
	if err != nil || found || !reflect.DeepEqual(a, datastore.Assignment{}) {
		t.Fatalf("Release(unknown) = %+v, %v, %v; want zero, false, nil", a, found, err)
	}
	mustRelease(t, s, key("a"), "198.18.0.1")
	if _, found, err := s.Release(context.Background(), key("a")); err != nil || found {
		t.Fatalf("second Release = found %v, err %v; want false, nil", found, err)
	}
}

// A StatefulSet pod keeps its name across sandboxes: the new sandbox is a
// new assignment, and a DEL for the old sandbox never touches the new one.
func TestSamePodNameWithNewSandboxIsAnotherAssignment(t *testing.T) {
	s := newFixture(t, "198.18.0.0/29").open()
	web := pod("web-0")
	mustAssign(t, s, key("sandbox-old"), web, "198.18.0.1")
	mustAssign(t, s, key("sandbox-new"), web, "198.18.0.2")
	mustRelease(t, s, key("sandbox-old"), "198.18.0.1")
	got, ok := s.Lookup(key("sandbox-new"))
	if !ok || got.Address.IP != netip.MustParseAddr("198.18.0.2") {
		t.Fatalf("Lookup(sandbox-new) = %+v, %v; want 198.18.0.2", got, ok)
	}
	if n := len(s.Assignments()); n != 1 {
		t.Fatalf("%d assignments, want 1", n)
	}
}

func TestGCReleasesOnlyInvalidAttachmentsOfItsNetwork(t *testing.T) {
	s := newFixture(t, "198.18.0.0/29").open()
	mustAssign(t, s, key("keep"), pod("k"), "198.18.0.1")
	mustAssign(t, s, key("gone"), pod("g"), "198.18.0.2")
	other := datastore.Key{Network: "storage", SandboxID: "gone", IfName: "net1"}
	mustAssign(t, s, other, pod("g"), "198.18.0.3")
	released, err := s.GC(context.Background(), "pods", []datastore.Key{key("keep")})
	if err != nil {
		t.Fatal(err)
	}
	if got := ipsOf(released); !maps.Equal(got, map[string]string{"gone/pods/eth0": "198.18.0.2"}) {
		t.Fatalf("GC released %v", got)
	}
	want := map[string]string{"keep/pods/eth0": "198.18.0.1", "gone/storage/net1": "198.18.0.3"}
	if got := ipsOf(s.Assignments()); !maps.Equal(got, want) {
		t.Fatalf("left %v, want %v", got, want)
	}
}

func TestReleasedAddressCoolsDownBeforeReuse(t *testing.T) {
	f := newFixture(t, "198.18.0.0/30") // .1 and .2
	s := f.open()
	mustAssign(t, s, key("a"), pod("a"), "198.18.0.1")
	mustAssign(t, s, key("b"), pod("b"), "198.18.0.2")
	mustRelease(t, s, key("a"), "198.18.0.1")
	if got := s.Stats(); got != (datastore.Stats{Total: 2, Assigned: 1, Cooling: 1}) {
		t.Fatalf("Stats = %+v", got)
	}
	f.clock.Advance(datastore.DefaultCooldown - time.Nanosecond)
	if _, err := s.Assign(context.Background(), key("c"), pod("c")); !errors.Is(err, datastore.ErrPoolExhausted) {
		t.Fatalf("Assign during cooldown: err = %v, want ErrPoolExhausted", err)
	}
	f.clock.Advance(time.Nanosecond)
	mustAssign(t, s, key("c"), pod("c"), "198.18.0.1")
}

// Options' zero cooldown is the default; NoCooldown, which ipamd passes
// for an operator's cooldown: 0s, is none: the released address is the
// next one handed out, at the same instant.
func TestCooldownZeroIsDefaultNoCooldownIsNone(t *testing.T) {
	if s := newFixture(t, "198.18.0.0/30").open(); s.Cooldown() != datastore.DefaultCooldown {
		t.Fatalf("Options{} cooldown = %s, want DefaultCooldown %s", s.Cooldown(), datastore.DefaultCooldown)
	}
	f := newFixture(t, "198.18.0.0/30") // .1 and .2
	f.cooldown = datastore.NoCooldown
	s := f.open()
	if s.Cooldown() != 0 {
		t.Fatalf("NoCooldown: Cooldown() = %s, want 0s", s.Cooldown())
	}
	mustAssign(t, s, key("a"), pod("a"), "198.18.0.1")
	mustAssign(t, s, key("b"), pod("b"), "198.18.0.2")
	mustRelease(t, s, key("a"), "198.18.0.1")
	if got := s.Stats(); got != (datastore.Stats{Total: 2, Assigned: 1, Free: 1}) {
		t.Fatalf("Stats right after the release = %+v, want the address free, not cooling", got)
	}
	mustAssign(t, s, key("c"), pod("c"), "198.18.0.1")
}

func TestUsageCountsPerGroup(t *testing.T) {
	f := newFixture(t, "198.18.0.0/29")
	s := f.open()
	ctx := context.Background()
	eni := []ipsource.Address{
		{IP: netip.MustParseAddr("10.0.0.10"), Subnet: netip.MustParsePrefix("10.0.0.0/24"), Group: "eni-1"},
		{IP: netip.MustParseAddr("10.0.0.11"), Subnet: netip.MustParsePrefix("10.0.0.0/24"), Group: "eni-1"},
	}
	if err := s.AddAddresses(ctx, eni); err != nil {
		t.Fatal(err)
	}
	mustAssign(t, s, key("a"), pod("a"), "10.0.0.10")
	mustAssign(t, s, key("b"), pod("b"), "10.0.0.11")
	mustAssign(t, s, key("c"), pod("c"), "198.18.0.1")
	mustRelease(t, s, key("b"), "10.0.0.11")
	want := []ipsource.GroupUsage{{Group: "eni-1", Total: 2, Assigned: 1, Cooling: 1}, {Group: "static", Total: 6, Assigned: 1}}
	got := s.Usage()
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("Usage = %+v, want %+v", got, want)
	}
}

func TestTakeFreeNeverTakesAssignedOrCooling(t *testing.T) {
	// Addresses added one by one, as the aws source adds an ENI's: a
	// block of several (a static CIDR) is never carved.
	f := newFixture(t)
	s := f.open()
	var addrs []ipsource.Address
	for i := 1; i <= 6; i++ {
		addrs = append(addrs, ipsource.Address{IP: netip.AddrFrom4([4]byte{198, 18, 0, byte(i)}), Subnet: netip.MustParsePrefix("198.18.0.0/29"), Group: "static"})
	}
	if err := s.AddAddresses(context.Background(), addrs); err != nil {
		t.Fatal(err)
	}
	mustAssign(t, s, key("a"), pod("a"), "198.18.0.1")
	mustAssign(t, s, key("b"), pod("b"), "198.18.0.2")
	mustRelease(t, s, key("b"), "198.18.0.2")
	taken, err := s.TakeFree(context.Background(), "static", 10)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, a := range taken {
		got = append(got, a.IP.String())
	}
	want := []string{"198.18.0.3", "198.18.0.4", "198.18.0.5", "198.18.0.6"}
	if len(got) != len(want) || got[0] != want[0] || got[3] != want[3] {
		t.Fatalf("TakeFree = %v, want %v", got, want)
	}
	if st := s.Stats(); st != (datastore.Stats{Total: 2, Assigned: 1, Cooling: 1}) {
		t.Fatalf("Stats = %+v", st)
	}
}

func TestAssignmentOutsideThePoolIsKeptAndNeverReissued(t *testing.T) {
	f := newFixture(t, "198.18.0.0/30")
	s := f.open()
	mustAssign(t, s, key("a"), pod("a"), "198.18.0.1")
	// The config changes: the old CIDR is gone after a restart.
	f.cidrs = []string{"198.18.1.0/30"}
	s = f.reopen(s)
	if a, ok := s.Lookup(key("a")); !ok || a.Address.IP != netip.MustParseAddr("198.18.0.1") {
		t.Fatalf("Lookup(a) = %+v, %v", a, ok)
	}
	mustAssign(t, s, key("b"), pod("b"), "198.18.1.1")
	mustRelease(t, s, key("a"), "198.18.0.1")
	f.clock.Advance(time.Hour)
	mustAssign(t, s, key("c"), pod("c"), "198.18.1.2")
	if _, err := s.Assign(context.Background(), key("d"), pod("d")); !errors.Is(err, datastore.ErrPoolExhausted) {
		t.Fatalf("err = %v: 198.18.0.1 left the pool and must not be handed out", err)
	}
}

func TestClosedStoreRefusesCalls(t *testing.T) {
	s := newFixture(t, "198.18.0.0/30").open()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Assign(context.Background(), key("a"), pod("a")); !errors.Is(err, datastore.ErrClosed) {
		t.Fatalf("Assign after Close: %v", err)
	}
	if _, _, err := s.Release(context.Background(), key("a")); !errors.Is(err, datastore.ErrClosed) {
		t.Fatalf("Release after Close: %v", err)
	}
}
