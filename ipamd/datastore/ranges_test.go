package datastore_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/sandboxipam/sandboxipam/ipamd/checkpoint"
	"github.com/sandboxipam/sandboxipam/ipamd/datastore"
	"github.com/sandboxipam/sandboxipam/ipamd/ipsource"
)

// An IPv6 /64 is a pool like any other: exact addresses in order, the
// cursor, cooldown and the checkpoint all work, and the checkpoint grows
// with the assignments, never with the /64.
func TestSlash64Pool(t *testing.T) {
	f := newFixture(t, "2001:db8:0:64::/64")
	s := f.open()
	st := s.Stats()
	if st.Free <= 1<<62 || st.Assigned != 0 {
		t.Fatalf("Stats = %+v, want a /64 of free addresses (saturated)", st)
	}
	// The subnet-router anycast address (the /64's first) is never
	// handed out.
	mustAssign(t, s, key("a"), pod("a"), "2001:db8:0:64::1")
	mustAssign(t, s, key("b"), pod("b"), "2001:db8:0:64::2")
	mustRelease(t, s, key("a"), "2001:db8:0:64::1")
	mustAssign(t, s, key("c"), pod("c"), "2001:db8:0:64::3")
	for i := range 300 {
		if _, err := s.Assign(context.Background(), key(fmt.Sprintf("n%d", i)), pod("n")); err != nil {
			t.Fatal(err)
		}
	}
	mustAssign(t, s, key("last"), pod("last"), "2001:db8:0:64::130")
	if rs := s.Ranges(); len(rs) != 1 || rs[0].Family != "ipv6" || rs[0].Size != 1<<64-1 || rs[0].Assigned != 303 || rs[0].Cooling != 1 {
		t.Fatalf("Ranges = %+v", rs)
	}
	s = f.reopen(s)
	if st := s.Stats(); st.Assigned != 303 || st.Cooling != 1 {
		t.Fatalf("after reopen: %+v", st)
	}
	mustAssign(t, s, key("next"), pod("next"), "2001:db8:0:64::131")
	st2, err := checkpoint.Load(f.path)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(st2.File.Addresses); n != 305 {
		t.Fatalf("checkpoint records %d addresses, want the 304 held and 1 cooling", n)
	}
}

// writeHeld writes a checkpoint in which n sandboxes hold the first n
// addresses from first on, the cursor after the last: a large state in
// milliseconds, where n durable Assigns would take minutes.
func writeHeld(t testing.TB, path string, first netip.Addr, subnet netip.Prefix, n int) {
	t.Helper()
	at := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	f := checkpoint.File{SavedAt: at}
	ip := first
	for i := range n {
		f.Addresses = append(f.Addresses, checkpoint.Address{IP: ip, Subnet: subnet, Group: "static"})
		f.Assignments = append(f.Assignments, checkpoint.Assignment{Network: "pods", SandboxID: fmt.Sprintf("held-%d", i), IfName: "eth0",
			IPs: []netip.Addr{ip}, AssignedAt: at})
		f.Cursors = []netip.Addr{ip}
		ip = ip.Next()
	}
	data, err := checkpoint.Encode(f)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := checkpoint.WriteAtomic(path, data); err != nil {
		t.Fatal(err)
	}
}

// The walk wraps around the end of the last block to the first, skips
// excluded addresses, a gateway, the network and broadcast addresses of
// IPv4, and finds the pool exhausted without visiting its whole size.
func TestRangesWrapSkipExcludedAndExhaust(t *testing.T) {
	f := newFixture(t)
	s := f.open()
	ctx := context.Background()
	err := s.AddRanges(ctx, []ipsource.Range{
		{Prefix: netip.MustParsePrefix("198.18.1.0/30"), First: netip.MustParseAddr("198.18.1.1"), Last: netip.MustParseAddr("198.18.1.2"),
			Subnet: netip.MustParsePrefix("198.18.1.0/30"), Group: "static"},
		{Prefix: netip.MustParsePrefix("198.18.0.0/29"), First: netip.MustParseAddr("198.18.0.1"), Last: netip.MustParseAddr("198.18.0.6"),
			Exclude: []netip.Addr{netip.MustParseAddr("198.18.0.1"), netip.MustParseAddr("198.18.0.4")}, Gateway: netip.MustParseAddr("198.18.0.1"),
			Subnet: netip.MustParsePrefix("198.18.0.0/29"), Group: "static"},
	})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for i := range 6 {
		a, err := s.Assign(ctx, key(fmt.Sprint(i)), pod("p"))
		if err != nil {
			t.Fatalf("Assign %d: %v", i, err)
		}
		got = append(got, a.Address.IP.String())
	}
	want := []string{"198.18.0.2", "198.18.0.3", "198.18.0.5", "198.18.0.6", "198.18.1.1", "198.18.1.2"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("assigned %v, want %v", got, want)
	}
	if _, err := s.Assign(ctx, key("x"), pod("x")); !errors.Is(err, datastore.ErrPoolExhausted) {
		t.Fatalf("Assign on a full pool = %v, want exhausted", err)
	}
	mustRelease(t, s, key("1"), "198.18.0.3")
	if _, err := s.Assign(ctx, key("x"), pod("x")); !errors.Is(err, datastore.ErrPoolExhausted) {
		t.Fatalf("Assign during cooldown = %v, want exhausted", err)
	}
	f.clock.Advance(time.Hour)
	mustAssign(t, s, key("x"), pod("x"), "198.18.0.3")
	// A block overlapping another is refused; the same prefix again
	// updates it.
	if err := s.AddRanges(ctx, []ipsource.Range{{Prefix: netip.MustParsePrefix("198.18.0.4/30")}}); err == nil {
		t.Fatal("an overlapping block was accepted")
	}
	if err := s.AddAddresses(ctx, []ipsource.Address{{IP: netip.MustParseAddr("198.18.1.2")}}); err == nil {
		t.Fatal("an address inside a block was accepted as a block of its own")
	}
}

// A nearly full /16 still hands out its last free addresses, and then
// says it is exhausted, without a walk over the /16 per call.
func TestNearlyFullSlash16(t *testing.T) {
	f := newFixture(t, "198.18.0.0/16")
	writeHeld(t, f.path, netip.MustParseAddr("198.18.0.1"), netip.MustParsePrefix("198.18.0.0/16"), 65534-2)
	s := f.open()
	ctx := context.Background()
	mustAssign(t, s, key("x"), pod("x"), "198.18.255.253")
	mustAssign(t, s, key("y"), pod("y"), "198.18.255.254")
	if _, err := s.Assign(ctx, key("z"), pod("z")); !errors.Is(err, datastore.ErrPoolExhausted) {
		t.Fatalf("Assign = %v, want exhausted", err)
	}
	if _, found, err := s.Release(ctx, datastore.Key{Network: "pods", SandboxID: "held-100", IfName: "eth0"}); !found || err != nil {
		t.Fatalf("Release = %v, %v", found, err)
	}
	f.clock.Advance(time.Hour)
	mustAssign(t, s, key("z"), pod("z"), "198.18.0.101")
}

// A pool with both families hands each key one address of each, released
// together, recorded together, and adopted together after a lost
// checkpoint.
func TestDualStackAssignReleaseAndCheckpoint(t *testing.T) {
	f := newFixture(t, "198.18.0.0/30", "2001:db8::/126")
	s := f.open()
	a := mustAssign(t, s, key("a"), pod("a"), "198.18.0.1")
	if len(a.Extra) != 1 || a.Extra[0].IP != netip.MustParseAddr("2001:db8::1") || a.Extra[0].Subnet != netip.MustParsePrefix("2001:db8::/126") {
		t.Fatalf("assignment %+v, want 2001:db8::1 as its IPv6 address (:: is the subnet-router anycast address)", a)
	}
	b := mustAssign(t, s, key("b"), pod("b"), "198.18.0.2")
	if got := b.IPs(); !reflect.DeepEqual(got, []netip.Addr{netip.MustParseAddr("198.18.0.2"), netip.MustParseAddr("2001:db8::2")}) {
		t.Fatalf("b = %v", got)
	}
	// IPv4 is exhausted: nothing is assigned, not even an IPv6 address.
	if _, err := s.Assign(context.Background(), key("c"), pod("c")); !errors.Is(err, datastore.ErrPoolExhausted) {
		t.Fatalf("Assign = %v, want exhausted", err)
	}
	if c := s.View().Census(); c[datastore.CensusKey{Group: "static", Family: "ipv6", State: datastore.StateFree}] != 1 ||
		c[datastore.CensusKey{Group: "static", Family: "ipv6", State: datastore.StateAssigned}] != 2 ||
		c[datastore.CensusKey{Group: "static", Family: "ipv4", State: datastore.StateFree}] != 0 {
		t.Fatalf("Census = %v", c)
	}
	s = f.reopen(s)
	if got, _ := s.Lookup(key("b")); !reflect.DeepEqual(got.IPs(), b.IPs()) {
		t.Fatalf("after reopen b = %v", got.IPs())
	}
	rel, found, err := s.Release(context.Background(), key("b"))
	if err != nil || !found || !reflect.DeepEqual(rel.IPs(), b.IPs()) {
		t.Fatalf("Release = %v, %v, %v", rel.IPs(), found, err)
	}
	if st := s.Stats(); st.Cooling != 2 || st.Assigned != 1 {
		t.Fatalf("Stats = %+v, want both of b's addresses cooling", st)
	}
	f.clock.Advance(time.Hour)
	c := mustAssign(t, s, key("c"), pod("c"), "198.18.0.2")
	if c.Extra[0].IP != netip.MustParseAddr("2001:db8::3") {
		t.Fatalf("c = %v: the IPv6 cursor goes on after ::2", c.IPs())
	}

	// Lost checkpoint: a listing reporting both of a pod's addresses
	// adopts them under its one key.
	g := newFixture(t, "198.18.0.0/30", "2001:db8::/126")
	g.proveWhenMissing = true
	u := g.open()
	rep, err := u.Observe(context.Background(), datastore.Evidence{Network: "pods", IfName: "eth0", At: g.clock.Now(),
		Listed: map[string]struct{}{"live": {}},
		Holdings: []datastore.Holding{
			{IP: netip.MustParseAddr("2001:db8::3"), SandboxID: "live", Ready: true, Source: "runtime"},
			{IP: netip.MustParseAddr("198.18.0.2"), SandboxID: "live", Ready: true, Source: "runtime"},
		}})
	if err != nil || rep.Adopted != 1 || !rep.Proven {
		t.Fatalf("Observe = %+v, %v", rep, err)
	}
	got, ok := u.Lookup(key("live"))
	if !ok || !reflect.DeepEqual(got.IPs(), []netip.Addr{netip.MustParseAddr("198.18.0.2"), netip.MustParseAddr("2001:db8::3")}) {
		t.Fatalf("adopted %+v", got)
	}
	n := mustAssign(t, u, key("new"), pod("new"), "198.18.0.1")
	if n.Extra[0].IP != netip.MustParseAddr("2001:db8::1") {
		t.Fatalf("new = %v", n.IPs())
	}
}

// GC and the reconciler's release free a dual-stack attachment as one:
// both addresses, one event, both cooling.
func TestDualStackGCAndReconcilerReleaseBothAddresses(t *testing.T) {
	f := newFixture(t, "198.18.0.0/29", "2001:db8::/125")
	s := f.open()
	ctx := context.Background()
	a := mustAssign(t, s, key("a"), pod("a"), "198.18.0.1")
	b := mustAssign(t, s, key("b"), pod("b"), "198.18.0.2")
	gone, err := s.GC(ctx, "pods", []datastore.Key{key("b")})
	if err != nil || len(gone) != 1 || !reflect.DeepEqual(gone[0].IPs(), a.IPs()) {
		t.Fatalf("GC = %+v, %v: want a's two addresses", gone, err)
	}
	stale, err := s.ReleaseAssignments(ctx, []datastore.Assignment{b})
	if err != nil || len(stale) != 1 || !reflect.DeepEqual(stale[0].IPs(), b.IPs()) {
		t.Fatalf("ReleaseAssignments = %+v, %v: want b's two addresses", stale, err)
	}
	if st := s.Stats(); st.Assigned != 0 || st.Cooling != 4 {
		t.Fatalf("Stats = %+v, want all four addresses cooling", st)
	}
}

// RemoveRange takes a block out only when none of its addresses is held,
// cooling or quarantined; a refused block stays whole.
func TestRemoveRangeOnlyWhenNothingInItIsTaken(t *testing.T) {
	f := newFixture(t)
	s := f.open()
	ctx := context.Background()
	a, b := netip.MustParsePrefix("198.18.0.16/28"), netip.MustParsePrefix("198.18.0.32/28")
	if err := s.AddRanges(ctx, []ipsource.Range{{Prefix: a, Group: "eni-1"}, {Prefix: b, Group: "eni-1"}}); err != nil {
		t.Fatal(err)
	}
	mustAssign(t, s, key("x"), pod("x"), "198.18.0.16")
	for _, p := range []netip.Prefix{a, b} {
		removed, err := s.RemoveRange(ctx, p)
		if err != nil || removed != (p == b) {
			t.Fatalf("RemoveRange(%s) = %v, %v", p, removed, err)
		}
	}
	mustRelease(t, s, key("x"), "198.18.0.16")
	if removed, _ := s.RemoveRange(ctx, a); removed {
		t.Fatal("a block with a cooling address was removed")
	}
	f.clock.Advance(time.Hour)
	if removed, _ := s.RemoveRange(ctx, a); !removed {
		t.Fatal("a free block was kept")
	}
	if st := s.Stats(); st.Total != 0 {
		t.Fatalf("Stats = %+v, want an empty pool", st)
	}
	if removed, err := s.RemoveRange(ctx, a); removed || err != nil {
		t.Fatalf("RemoveRange of an absent block = %v, %v", removed, err)
	}
}

// While unproven, no address is free to give back: TakeFree and
// RemoveRange take nothing (a live pod may hold any of them).
func TestUnprovenStoreGivesNothingBack(t *testing.T) {
	f := newFixture(t)
	f.proveWhenMissing = true
	s := f.open()
	ctx := context.Background()
	if err := s.AddAddresses(ctx, []ipsource.Address{{IP: netip.MustParseAddr("198.18.0.9"), Group: "eni-1"}}); err != nil {
		t.Fatal(err)
	}
	if err := s.AddRanges(ctx, []ipsource.Range{{Prefix: netip.MustParsePrefix("198.18.0.16/28"), Group: "eni-1"}}); err != nil {
		t.Fatal(err)
	}
	if taken, err := s.TakeFree(ctx, "eni-1", 10); err != nil || len(taken) != 0 {
		t.Fatalf("TakeFree while unproven = %v, %v", taken, err)
	}
	if removed, err := s.RemoveRange(ctx, netip.MustParsePrefix("198.18.0.16/28")); err != nil || removed {
		t.Fatalf("RemoveRange while unproven = %v, %v", removed, err)
	}
	if st := s.Stats(); st.Total != 17 || st.Quarantined != 17 {
		t.Fatalf("Stats = %+v", st)
	}
}

// Proof on a /64 pool: the report saturates instead of overflowing, and
// the pool hands out its exact first address.
func TestProofOfASlash64Pool(t *testing.T) {
	f := newFixture(t, "2001:db8:9::/64")
	f.proveWhenMissing = true
	s := f.open()
	if st := s.Stats(); st.Quarantined != math.MaxInt || st.Free != 0 {
		t.Fatalf("Stats while unproven = %+v", st)
	}
	rep, err := s.Observe(context.Background(), datastore.Evidence{Network: "pods", IfName: "eth0", At: f.clock.Now(),
		Listed: map[string]struct{}{"a": {}, "b": {}},
		Holdings: []datastore.Holding{
			{IP: netip.MustParseAddr("2001:db8:9::"), SandboxID: "a", Ready: true, Source: "runtime"},
			{IP: netip.MustParseAddr("2001:db8:9::1"), SandboxID: "b", Ready: true, Source: "runtime"},
			{IP: netip.MustParseAddr("2001:db8:9::1"), SandboxID: "c", Ready: true, Source: "runtime"},
		}})
	if err != nil || !rep.Proven || rep.Adopted != 2 || rep.ProvenFree != math.MaxInt || rep.Quarantined != 1 {
		t.Fatalf("Observe = %+v, %v", rep, err)
	}
	mustAssign(t, s, key("new"), pod("new"), "2001:db8:9::2")
}
