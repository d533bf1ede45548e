// Package state is the datastore's assignment state as a value: the taken
// addresses (held, cooling, quarantined) and their entries, the
// assignments, the family cursors, whether the store is unproven and the
// sandboxes whose CNI DEL was answered (deleted.go).
//
// It is changed only by applying a change record, (*State).Apply with one
// of the closed set of Changes in change.go, and each Apply notes in a
// Touched what it changed: exactly the addresses and keys the next
// journal record must hold. The datastore used to set entry fields from
// many files and mark what was dirty by hand; a change that forgot to mark
// was a record the journal never held. Here the change and what it
// touched are one step, and table-tested as one (state_test.go).
//
// The conversions to and from package checkpoint's forms are here too
// (checkpoint.go): a snapshot of the whole state, the record of a Touched
// set, and the state rebuilt from a loaded snapshot and journal, because
// what a snapshot records of an entry (held, cooling, a quarantine that
// outlives the unproven state) is a question about the entry.
//
// No I/O, no lock, no clock: the datastore holds its lock around every
// call, and every change that depends on the time carries it. The pool's
// blocks are not here: whether an address is in the pool, and its
// Subnet, Gateway and Group, are the store's to decide and arrive as
// Changes (Hold, Quarantine and Repool carry the address as the pool
// gives it).
//
// See docs/architecture.md for where this package sits and the life of an
// ADD, a DEL, a reconcile pass and a restart through the daemon.
package state

import (
	"iter"
	"net/netip"
	"slices"
	"time"

	"github.com/sandboxipam/sandboxipam/ipamd/ipsource"
)

// Entry is what the state knows about one taken address. Reads return
// copies: only Apply changes an entry.
type Entry struct {
	Addr ipsource.Address
	// Quarantined addresses are never handed out: after a lost
	// checkpoint, or while a pod the store does not record holds them,
	// nobody can say they are free.
	Quarantined bool
	// Holder is the key of the assignment holding the address, if Held.
	Holder Key
	Held   bool
	// ReleasedAt is when the address was last released; it cools down
	// from then.
	ReleasedAt time.Time
}

// Cooling reports whether a released address still waits out cooldown.
func (e Entry) Cooling(now time.Time, cooldown time.Duration) bool {
	return !e.Held && !e.ReleasedAt.IsZero() && now.Before(e.ReleasedAt.Add(cooldown))
}

// Free reports whether nothing keeps the address from a pod but the pool.
func (e Entry) Free(now time.Time, cooldown time.Duration) bool {
	return !e.Quarantined && !e.Held && !e.Cooling(now, cooldown)
}

// State is the assignment state. The zero value is not usable: see New.
type State struct {
	cooldown time.Duration
	// addrs holds the taken addresses (held, cooling, quarantined) and
	// those outside the pool an assignment holds; a pool address with no
	// entry is free.
	addrs map[netip.Addr]*Entry
	// marked holds the addresses that are cooling or quarantined, so a
	// snapshot visits assignments and these, never all entries.
	marked      map[netip.Addr]struct{}
	assignments map[Key]*Assignment
	// cursors are the addresses handed out last, IPv4 then IPv6.
	cursors  [2]netip.Addr
	unproven bool
	// deleted holds the sandboxes whose CNI DEL was answered while a
	// listing still shows them, and when (see deleted.go).
	deleted map[Key]time.Time
}

// New returns an empty, proven state whose released addresses cool down
// for cooldown.
func New(cooldown time.Duration) *State {
	return &State{
		cooldown:    cooldown,
		addrs:       make(map[netip.Addr]*Entry),
		marked:      make(map[netip.Addr]struct{}),
		assignments: make(map[Key]*Assignment),
		deleted:     make(map[Key]time.Time),
	}
}

// Cooldown is how long a released address waits before reuse.
func (st *State) Cooldown() time.Duration { return st.cooldown }

// Unproven reports whether no address may be handed out until a listing
// proves the pool.
func (st *State) Unproven() bool { return st.unproven }

// Lookup returns the assignment under key.
func (st *State) Lookup(key Key) (Assignment, bool) {
	a, ok := st.assignments[key]
	if !ok {
		return Assignment{}, false
	}
	return *a, true
}

// Len counts the assignments.
func (st *State) Len() int { return len(st.assignments) }

// Assignments yields a copy of every assignment, in no order.
func (st *State) Assignments() iter.Seq[Assignment] {
	return func(yield func(Assignment) bool) {
		for _, a := range st.assignments {
			if !yield(*a) {
				return
			}
		}
	}
}

// Sorted returns a copy of every assignment, sorted by key.
func (st *State) Sorted() []Assignment {
	out := make([]Assignment, 0, len(st.assignments))
	for _, a := range st.assignments {
		out = append(out, *a)
	}
	slices.SortFunc(out, func(a, b Assignment) int { return CompareKeys(a.Key, b.Key) })
	return out
}

// Entry returns the entry of ip, false for a free pool address or one
// nothing records.
func (st *State) Entry(ip netip.Addr) (Entry, bool) {
	e, ok := st.addrs[ip]
	if !ok {
		return Entry{}, false
	}
	return *e, true
}

// Taken reports whether ip is held, cooling or quarantined at now: the
// allocator's question, asked once per address it walks past.
func (st *State) Taken(ip netip.Addr, now time.Time) bool {
	e, ok := st.addrs[ip]
	return ok && !e.Free(now, st.cooldown)
}

// TakenCount bounds how many addresses Taken reports: the entries.
func (st *State) TakenCount() int { return len(st.addrs) }

// Addresses yields every entry, in no order (for counting).
func (st *State) Addresses() iter.Seq2[netip.Addr, Entry] {
	return func(yield func(netip.Addr, Entry) bool) {
		for ip, e := range st.addrs {
			if !yield(ip, *e) {
				return
			}
		}
	}
}

// Quarantined returns the quarantined addresses in address order.
func (st *State) Quarantined() []netip.Addr {
	var out []netip.Addr
	for ip := range st.marked {
		if e, ok := st.addrs[ip]; ok && e.Quarantined {
			out = append(out, ip)
		}
	}
	slices.SortFunc(out, netip.Addr.Compare)
	return out
}

// Cursor is the address of ip's family handed out last, or the zero Addr.
func (st *State) Cursor(family string) netip.Addr {
	return st.cursors[familySlot(family)]
}

// familySlot is the slot of a family's cursor: IPv4 first.
func familySlot(family string) int {
	if family == "ipv4" {
		return 0
	}
	return 1
}

// Touched collects what Apply changed: the addresses and assignment keys
// whose record may differ now, and Whole when a change altered what the
// whole state records (the unproven flag: every quarantine's record
// depends on it), so that only a snapshot holds it. The zero value is
// ready to use.
type Touched struct {
	IPs  map[netip.Addr]struct{}
	Keys map[Key]struct{}
	// Deleted holds the keys whose answered DEL was noted or forgotten.
	Deleted map[Key]struct{}
	Whole   bool
}

func (t *Touched) ip(ip netip.Addr) {
	if t.IPs == nil {
		t.IPs = make(map[netip.Addr]struct{})
	}
	t.IPs[ip] = struct{}{}
}

func (t *Touched) deleted(k Key) {
	if t.Deleted == nil {
		t.Deleted = make(map[Key]struct{})
	}
	t.Deleted[k] = struct{}{}
}

func (t *Touched) key(k Key) {
	if t.Keys == nil {
		t.Keys = make(map[Key]struct{})
	}
	t.Keys[k] = struct{}{}
}

// Reset forgets what was touched: a snapshot holds it all.
func (t *Touched) Reset() {
	clear(t.IPs)
	clear(t.Keys)
	clear(t.Deleted)
	t.Whole = false
}

// Empty reports whether nothing was touched.
func (t *Touched) Empty() bool {
	return len(t.IPs) == 0 && len(t.Keys) == 0 && len(t.Deleted) == 0 && !t.Whole
}
