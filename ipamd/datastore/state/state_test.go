package state

import (
	"fmt"
	"maps"
	"net/netip"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/sandboxipam/sandboxipam/ipamd/checkpoint"
	"github.com/sandboxipam/sandboxipam/ipamd/ipsource"
)

const cool = 30 * time.Second

var (
	t0  = time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	ip1 = netip.MustParseAddr("10.0.0.1")
	ip2 = netip.MustParseAddr("10.0.0.2")
	ip6 = netip.MustParseAddr("fd00::1")
	k1  = Key{Network: "net", SandboxID: "sb1", IfName: "eth0"}
	k2  = Key{Network: "net", SandboxID: "sb2", IfName: "eth0"}

	addr1 = ipsource.Address{IP: ip1, Subnet: netip.MustParsePrefix("10.0.0.0/24"), Gateway: netip.MustParseAddr("10.0.0.254"), Group: "g"}
	addr2 = ipsource.Address{IP: ip2, Subnet: netip.MustParsePrefix("10.0.0.0/24"), Gateway: netip.MustParseAddr("10.0.0.254"), Group: "g"}
	addr6 = ipsource.Address{IP: ip6, Subnet: netip.MustParsePrefix("fd00::/64"), Group: "g"}
	// moved1 is ip1 after its block changed its metadata.
	moved1 = ipsource.Address{IP: ip1, Subnet: netip.MustParsePrefix("10.0.0.0/16"), Gateway: netip.MustParseAddr("10.0.255.254"), Group: "h"}
)

// held returns a new assignment of key holding addrs, made at t0.
func held(key Key, addrs ...ipsource.Address) *Assignment {
	a := &Assignment{Key: key, Pod: Pod{Name: key.SandboxID}, Address: addrs[0], AssignedAt: t0}
	if len(addrs) > 1 {
		a.Extra = slices.Clone(addrs[1:])
	}
	return a
}

// view is a State as plain values, nil for what is empty, to compare.
type view struct {
	Entries     map[netip.Addr]Entry
	Marked      []netip.Addr
	Assignments map[Key]Assignment
	Cursors     [2]netip.Addr
	Unproven    bool
	Deleted     map[Key]time.Time
}

func viewOf(st *State) view {
	v := view{Cursors: st.cursors, Unproven: st.unproven}
	if len(st.deleted) > 0 {
		v.Deleted = maps.Clone(st.deleted)
	}
	for ip, e := range st.addrs {
		if v.Entries == nil {
			v.Entries = map[netip.Addr]Entry{}
		}
		v.Entries[ip] = *e
	}
	for ip := range st.marked {
		v.Marked = append(v.Marked, ip)
	}
	slices.SortFunc(v.Marked, netip.Addr.Compare)
	for k, a := range st.assignments {
		if v.Assignments == nil {
			v.Assignments = map[Key]Assignment{}
		}
		v.Assignments[k] = *a
	}
	return v
}

// touched is a Touched as sorted lists, nil for what is empty.
type touched struct {
	IPs     []netip.Addr
	Keys    []Key
	Deleted []Key
	Whole   bool
}

func touchedOf(t *Touched) touched {
	out := touched{Whole: t.Whole}
	if len(t.Deleted) > 0 {
		out.Deleted = slices.SortedFunc(maps.Keys(t.Deleted), CompareKeys)
	}
	if len(t.IPs) > 0 {
		out.IPs = slices.SortedFunc(maps.Keys(t.IPs), netip.Addr.Compare)
	}
	if len(t.Keys) > 0 {
		out.Keys = slices.SortedFunc(maps.Keys(t.Keys), CompareKeys)
	}
	return out
}

// build applies changes to an empty state, forgetting what they touched.
func build(changes ...Change) *State {
	st := New(cool)
	var t Touched
	for _, c := range changes {
		st.Apply(c, &t)
	}
	return st
}

func TestApply(t *testing.T) {
	withAddr := func(a *Assignment, addr ipsource.Address) Assignment {
		out := *a
		out.Address = addr
		return out
	}
	listed := *held(k1, addr1)
	listed.ListedAt = t0.Add(time.Minute)
	for _, tc := range []struct {
		name    string
		before  []Change
		change  Change
		after   view
		touched touched
	}{{
		name:    "hold a new address",
		change:  Hold(held(k1, addr1)),
		after:   view{Entries: map[netip.Addr]Entry{ip1: {Addr: addr1, Held: true, Holder: k1}}, Assignments: map[Key]Assignment{k1: *held(k1, addr1)}},
		touched: touched{IPs: []netip.Addr{ip1}, Keys: []Key{k1}},
	}, {
		name:   "hold both families, lifting a quarantine",
		before: []Change{Quarantine(addr1)},
		change: Hold(held(k1, addr1, addr6)),
		after: view{
			Entries:     map[netip.Addr]Entry{ip1: {Addr: addr1, Held: true, Holder: k1}, ip6: {Addr: addr6, Held: true, Holder: k1}},
			Marked:      []netip.Addr{ip1},
			Assignments: map[Key]Assignment{k1: *held(k1, addr1, addr6)},
		},
		touched: touched{IPs: []netip.Addr{ip1, ip6}, Keys: []Key{k1}},
	}, {
		name:    "release starts the cooldown",
		before:  []Change{Hold(held(k1, addr1, addr6))},
		change:  Release(k1, t0.Add(time.Minute)),
		after:   view{Entries: map[netip.Addr]Entry{ip1: {Addr: addr1, ReleasedAt: t0.Add(time.Minute)}, ip6: {Addr: addr6, ReleasedAt: t0.Add(time.Minute)}}, Marked: []netip.Addr{ip1, ip6}},
		touched: touched{IPs: []netip.Addr{ip1, ip6}, Keys: []Key{k1}},
	}, {
		name:   "release of an unknown key",
		before: []Change{Hold(held(k1, addr1))},
		change: Release(k2, t0),
		after:  view{Entries: map[netip.Addr]Entry{ip1: {Addr: addr1, Held: true, Holder: k1}}, Assignments: map[Key]Assignment{k1: *held(k1, addr1)}},
	}, {
		name:    "quarantine a free address",
		change:  Quarantine(addr2),
		after:   view{Entries: map[netip.Addr]Entry{ip2: {Addr: addr2, Quarantined: true}}, Marked: []netip.Addr{ip2}},
		touched: touched{IPs: []netip.Addr{ip2}},
	}, {
		name:   "quarantine a held address keeps its holder",
		before: []Change{Hold(held(k1, addr1))},
		change: Quarantine(ipsource.Address{IP: ip1}),
		after: view{Entries: map[netip.Addr]Entry{ip1: {Addr: addr1, Held: true, Holder: k1, Quarantined: true}}, Marked: []netip.Addr{ip1},
			Assignments: map[Key]Assignment{k1: *held(k1, addr1)}},
		touched: touched{IPs: []netip.Addr{ip1}},
	}, {
		name:   "quarantine again touches nothing",
		before: []Change{Quarantine(addr2)},
		change: Quarantine(addr2),
		after:  view{Entries: map[netip.Addr]Entry{ip2: {Addr: addr2, Quarantined: true}}, Marked: []netip.Addr{ip2}},
	}, {
		name:    "clear a quarantine",
		before:  []Change{Quarantine(addr2)},
		change:  Clear(ip2),
		after:   view{Entries: map[netip.Addr]Entry{ip2: {Addr: addr2}}, Marked: []netip.Addr{ip2}},
		touched: touched{IPs: []netip.Addr{ip2}},
	}, {
		name:   "clear what is not quarantined",
		before: []Change{Hold(held(k1, addr1))},
		change: Clear(ip1),
		after:  view{Entries: map[netip.Addr]Entry{ip1: {Addr: addr1, Held: true, Holder: k1}}, Assignments: map[Key]Assignment{k1: *held(k1, addr1)}},
	}, {
		name:   "cursor of each family",
		before: []Change{Cursor(ip1)},
		change: Cursor(ip6),
		after:  view{Cursors: [2]netip.Addr{ip1, ip6}},
	}, {
		name:    "set unproven touches the whole state",
		change:  SetUnproven(true),
		after:   view{Unproven: true},
		touched: touched{Whole: true},
	}, {
		name:   "set unproven as it is",
		before: []Change{SetUnproven(true)},
		change: SetUnproven(true),
		after:  view{Unproven: true},
	}, {
		name: "prune forgets finished cooldowns only",
		before: []Change{
			Hold(held(k1, addr1)), Release(k1, t0),
			Hold(held(k2, addr6)), Release(k2, t0.Add(10*time.Second)),
			Quarantine(addr2),
		},
		change: Prune(t0.Add(cool)),
		after: view{Entries: map[netip.Addr]Entry{ip2: {Addr: addr2, Quarantined: true}, ip6: {Addr: addr6, ReleasedAt: t0.Add(10 * time.Second)}},
			Marked: []netip.Addr{ip2, ip6}},
	}, {
		name:   "drop a free address",
		before: []Change{Hold(held(k1, addr1)), Release(k1, t0)},
		change: Drop(ip1, t0.Add(cool)),
	}, {
		name:   "drop a cooling address does nothing",
		before: []Change{Hold(held(k1, addr1)), Release(k1, t0)},
		change: Drop(ip1, t0.Add(time.Second)),
		after:  view{Entries: map[netip.Addr]Entry{ip1: {Addr: addr1, ReleasedAt: t0}}, Marked: []netip.Addr{ip1}},
	}, {
		name:   "repool a held address updates its assignment",
		before: []Change{Hold(held(k1, addr1, addr6))},
		change: Repool(moved1, t0),
		after: view{Entries: map[netip.Addr]Entry{ip1: {Addr: moved1, Held: true, Holder: k1}, ip6: {Addr: addr6, Held: true, Holder: k1}},
			Assignments: map[Key]Assignment{k1: withAddr(held(k1, addr1, addr6), moved1)}},
		touched: touched{IPs: []netip.Addr{ip1}},
	}, {
		name:   "repool a cooled address touches nothing",
		before: []Change{Hold(held(k1, addr1)), Release(k1, t0)},
		change: Repool(moved1, t0.Add(cool)),
		after:  view{Entries: map[netip.Addr]Entry{ip1: {Addr: moved1, ReleasedAt: t0}}, Marked: []netip.Addr{ip1}},
	}, {
		name:   "repool a quarantine while unproven touches nothing",
		before: []Change{SetUnproven(true), Quarantine(addr1)},
		change: Repool(moved1, t0),
		after:  view{Entries: map[netip.Addr]Entry{ip1: {Addr: moved1, Quarantined: true}}, Marked: []netip.Addr{ip1}, Unproven: true},
	}, {
		name:    "repool a quarantine while proven",
		before:  []Change{Quarantine(addr1)},
		change:  Repool(moved1, t0),
		after:   view{Entries: map[netip.Addr]Entry{ip1: {Addr: moved1, Quarantined: true}}, Marked: []netip.Addr{ip1}},
		touched: touched{IPs: []netip.Addr{ip1}},
	}, {
		name:   "repool an address with no entry",
		change: Repool(moved1, t0),
	}, {
		name:    "confirm a listed assignment",
		before:  []Change{Hold(held(k1, addr1))},
		change:  Confirm(k1, t0.Add(time.Minute)),
		after:   view{Entries: map[netip.Addr]Entry{ip1: {Addr: addr1, Held: true, Holder: k1}}, Assignments: map[Key]Assignment{k1: listed}},
		touched: touched{Keys: []Key{k1}},
	}, {
		name:   "confirm keeps the first listing",
		before: []Change{Hold(held(k1, addr1)), Confirm(k1, t0.Add(time.Minute))},
		change: Confirm(k1, t0.Add(time.Hour)),
		after:  view{Entries: map[netip.Addr]Entry{ip1: {Addr: addr1, Held: true, Holder: k1}}, Assignments: map[Key]Assignment{k1: listed}},
	}, {
		name:    "note an answered DEL",
		before:  []Change{Hold(held(k1, addr1)), Release(k1, t0)},
		change:  NoteDeleted(k1, t0),
		after:   view{Entries: map[netip.Addr]Entry{ip1: {Addr: addr1, ReleasedAt: t0}}, Marked: []netip.Addr{ip1}, Deleted: map[Key]time.Time{k1: t0}},
		touched: touched{Deleted: []Key{k1}},
	}, {
		name:   "note a repeated DEL keeps the first",
		before: []Change{NoteDeleted(k1, t0)},
		change: NoteDeleted(k1, t0.Add(time.Minute)),
		after:  view{Deleted: map[Key]time.Time{k1: t0}},
	}, {
		name:    "forget an answered DEL",
		before:  []Change{NoteDeleted(k1, t0), NoteDeleted(k2, t0)},
		change:  ForgetDeleted(k1),
		after:   view{Deleted: map[Key]time.Time{k2: t0}},
		touched: touched{Deleted: []Key{k1}},
	}, {
		name:   "forget what was never noted",
		change: ForgetDeleted(k1),
	}} {
		t.Run(tc.name, func(t *testing.T) {
			st := build(tc.before...)
			var got Touched
			st.Apply(tc.change, &got)
			if v := viewOf(st); !reflect.DeepEqual(v, tc.after) {
				t.Errorf("state after:\n got %+v\nwant %+v", v, tc.after)
			}
			if g := touchedOf(&got); !reflect.DeepEqual(g, tc.touched) {
				t.Errorf("touched:\n got %+v\nwant %+v", g, tc.touched)
			}
		})
	}
}

// TestRecord: a record holds each touched address and key as it is now,
// set or dropped, and resets the Touched.
func TestRecord(t *testing.T) {
	st := build(Hold(held(k1, addr1, addr6)), Hold(held(k2, addr2)), SetUnproven(true), SetUnproven(false))
	var touched Touched
	st.Apply(Release(k1, t0), &touched)
	st.Apply(Quarantine(ipsource.Address{IP: ip2}), &touched)
	st.Apply(Cursor(ip2), &touched)
	got := st.Record(&touched, t0.Add(time.Second))
	want := checkpoint.Record{
		Cursors: []netip.Addr{ip2},
		Addresses: []checkpoint.Address{
			{IP: ip1, Subnet: addr1.Subnet, Gateway: addr1.Gateway, Group: "g", ReleasedAt: t0},
			{IP: ip2, Subnet: addr2.Subnet, Gateway: addr2.Gateway, Group: "g"},
			{IP: ip6, Subnet: addr6.Subnet, Group: "g", ReleasedAt: t0},
		},
		DropAssignments: []checkpoint.AssignmentKey{{Network: "net", SandboxID: "sb1", IfName: "eth0"}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("record:\n got %+v\nwant %+v", got, want)
	}
	if !touched.Empty() {
		t.Errorf("Record left %+v touched", touchedOf(&touched))
	}
	// Once the cooldown is over, the released addresses are dropped.
	touched.ip(ip1)
	got = st.Record(&touched, t0.Add(cool))
	if want := []netip.Addr{ip1}; !slices.Equal(got.DropAddresses, want) || len(got.Addresses) != 0 {
		t.Errorf("record after the cooldown: %+v, want only %v dropped", got, want)
	}
}

// TestSnapshotRoundTrip: a snapshot loads back into the same state, but
// for what it does not record (a finished cooldown, a quarantine while
// unproven) and the marks of held addresses.
func TestSnapshotRoundTrip(t *testing.T) {
	st := build(
		Hold(held(k1, addr1, addr6)), Confirm(k1, t0.Add(time.Minute)), Cursor(ip1), Cursor(ip6),
		Hold(held(k2, addr2)), Release(k2, t0.Add(time.Minute)),
	)
	var touched Touched
	st.Apply(Prune(t0.Add(time.Minute)), &touched)
	f := st.Snapshot(t0.Add(time.Minute))
	back := FromFile(f, cool)
	if g, w := viewOf(back), viewOf(st); !reflect.DeepEqual(g, w) {
		t.Errorf("loaded back:\n got %+v\nwant %+v", g, w)
	}
	unproven := build(SetUnproven(true), Quarantine(addr2))
	if f := unproven.Snapshot(t0); !f.Unproven || len(f.Addresses) != 0 {
		t.Errorf("unproven snapshot %+v: want unproven and no address (every quarantine is implicit)", f)
	}
}

// The answered DELs are recorded as they are now (set or dropped), in a
// snapshot too, and load back: a restart remembers them.
func TestDeletedRecordAndSnapshot(t *testing.T) {
	st := build(Hold(held(k1, addr1)), NoteDeleted(k2, t0))
	var touched Touched
	st.Apply(Release(k1, t0.Add(time.Second)), &touched)
	st.Apply(NoteDeleted(k1, t0.Add(time.Second)), &touched)
	st.Apply(ForgetDeleted(k2), &touched)
	got := st.Record(&touched, t0.Add(2*time.Second))
	wantSet := []checkpoint.Deleted{{Network: "net", SandboxID: "sb1", IfName: "eth0", At: t0.Add(time.Second)}}
	wantDrop := []checkpoint.AssignmentKey{{Network: "net", SandboxID: "sb2", IfName: "eth0"}}
	if !reflect.DeepEqual(got.Deleted, wantSet) || !reflect.DeepEqual(got.DropDeleted, wantDrop) {
		t.Errorf("record deleted %+v, dropped %+v; want %+v, %+v", got.Deleted, got.DropDeleted, wantSet, wantDrop)
	}
	f := st.Snapshot(t0.Add(2 * time.Second))
	if !reflect.DeepEqual(f.Deleted, wantSet) {
		t.Errorf("snapshot deleted %+v, want %+v", f.Deleted, wantSet)
	}
	if g, w := viewOf(FromFile(f, cool)).Deleted, (map[Key]time.Time{k1: t0.Add(time.Second)}); !reflect.DeepEqual(g, w) {
		t.Errorf("loaded back %+v, want %+v", g, w)
	}
	if f := build().Snapshot(t0); f.Deleted != nil {
		t.Errorf("a state with no answered DEL snapshots %+v, want none (the file an older build wrote)", f.Deleted)
	}
}

// Beyond MaxDeleted the oldest deletedTrim answered DELs are forgotten
// at once, and recorded as dropped; the one just noted never is.
func TestDeletedBounded(t *testing.T) {
	st := New(cool)
	var touched Touched
	sb := func(i int) Key { return Key{Network: "net", SandboxID: fmt.Sprintf("%05d", i), IfName: "eth0"} }
	for i := range MaxDeleted {
		st.Apply(NoteDeleted(sb(i), t0.Add(time.Duration(i))), &touched)
	}
	touched.Reset()
	newest := Key{Network: "net", SandboxID: "newest", IfName: "eth0"}
	st.Apply(NoteDeleted(newest, t0), &touched) // as old as the oldest
	if st.DeletedLen() != MaxDeleted+1-deletedTrim {
		t.Fatalf("%d remembered, want %d", st.DeletedLen(), MaxDeleted+1-deletedTrim)
	}
	want := []Key{}
	for i := range deletedTrim {
		if _, ok := st.deleted[sb(i)]; ok {
			t.Fatalf("%v kept, want the oldest %d forgotten", sb(i), deletedTrim)
		}
		want = append(want, sb(i))
	}
	if _, ok := st.deleted[newest]; !ok {
		t.Fatal("the DEL just noted was forgotten")
	}
	if _, ok := st.deleted[sb(deletedTrim)]; !ok {
		t.Fatalf("%v forgotten, want only the oldest %d", sb(deletedTrim), deletedTrim)
	}
	if g := touchedOf(&touched).Deleted; !slices.Equal(g, append(want, newest)) {
		t.Errorf("touched %d keys, want the %d forgotten and the new one", len(g), deletedTrim)
	}
}
