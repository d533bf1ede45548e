package state

// The change records: the only way a State changes. A Change is a plain
// struct with a kind, never an interface, so building and applying one on
// the ADD path allocates nothing. The set is closed: each constructor
// below is one thing the datastore does to its state.

import (
	"net/netip"
	"time"

	"github.com/sandboxipam/sandboxipam/ipamd/ipsource"
)

type kind uint8

const (
	kindHold kind = iota + 1
	kindRelease
	kindQuarantine
	kindClear
	kindCursor
	kindSetUnproven
	kindPrune
	kindDrop
	kindRepool
	kindConfirm
	kindNoteDeleted
	kindForgetDeleted
)

// Change is one change record; build it with the constructors.
type Change struct {
	kind       kind
	assignment *Assignment
	key        Key
	addr       ipsource.Address
	at         time.Time
	unproven   bool
}

// Hold records a as the holder of its addresses (an ADD, an adoption, a
// restored assignment) and lifts any quarantine of them: the state now
// knows who holds them. An address with no entry gets one with a's
// Address as the pool gives it. The state keeps a; the caller must not
// change it afterwards. Touches a's addresses and key.
func Hold(a *Assignment) Change { return Change{kind: kindHold, assignment: a} }

// Release drops the assignment under key and starts the cooldown, from
// at, of the addresses it held (one per family), together. Touches them
// and the key; an unknown key changes nothing.
func Release(key Key, at time.Time) Change { return Change{kind: kindRelease, key: key, at: at} }

// Quarantine marks addr.IP as never handed out (a pod the store does not
// record holds it, or an operator released it by force while it is still
// in use), making an entry with addr when there is none. Touches the
// address, unless it was quarantined already.
func Quarantine(addr ipsource.Address) Change { return Change{kind: kindQuarantine, addr: addr} }

// Clear lifts the quarantine of ip: a proven store's listing shows no
// pod holding it. Touches the address, if it was quarantined.
func Clear(ip netip.Addr) Change {
	return Change{kind: kindClear, addr: ipsource.Address{IP: ip}}
}

// Cursor records ip as its family's address handed out last. Touches
// nothing: every record carries the cursors.
func Cursor(ip netip.Addr) Change {
	return Change{kind: kindCursor, addr: ipsource.Address{IP: ip}}
}

// SetUnproven sets whether the store refuses to hand out addresses until
// a listing proves the pool. A change of it changes what every
// quarantine records, so it touches the Whole state.
func SetUnproven(unproven bool) Change { return Change{kind: kindSetUnproven, unproven: unproven} }

// Prune forgets the addresses whose cooldown is over at at: a free pool
// address has no entry, and one outside the pool that nobody holds
// leaves nothing to remember. Touches nothing: neither is recorded.
func Prune(at time.Time) Change { return Change{kind: kindPrune, at: at} }

// Drop forgets ip, which leaves the pool (TakeFree), when it is free at
// at; a taken address is never dropped. Touches nothing: a free address
// is not recorded.
func Drop(ip netip.Addr, at time.Time) Change {
	return Change{kind: kindDrop, addr: ipsource.Address{IP: ip}, at: at}
}

// Repool gives addr.IP's entry, and the assignment holding it, the
// Subnet, Gateway and Group of the pool block that now holds it, so the
// state reads the same after a restart. Touches the address when its
// record (held, cooling at at, or quarantined while proven) changed.
func Repool(addr ipsource.Address, at time.Time) Change {
	return Change{kind: kindRepool, addr: addr, at: at}
}

// Confirm records that a runtime listing at at showed key's sandbox,
// unless one showed it before (ListedAt). Touches the key when it did.
func Confirm(key Key, at time.Time) Change { return Change{kind: kindConfirm, key: key, at: at} }

// NoteDeleted records that key's CNI DEL was answered at at, unless it was
// noted already (the first answer counts; kubelet repeats DELs). Touches
// key's deleted record when it did, and that of the oldest noted key when
// more than MaxDeleted are noted: that one is forgotten.
func NoteDeleted(key Key, at time.Time) Change {
	return Change{kind: kindNoteDeleted, key: key, at: at}
}

// ForgetDeleted forgets that key's DEL was answered: a listing no longer
// shows the sandbox, or an ADD wired it again. Touches key's deleted
// record when there was one.
func ForgetDeleted(key Key) Change { return Change{kind: kindForgetDeleted, key: key} }

// Apply makes the change c and notes what it touched in t.
func (st *State) Apply(c Change, t *Touched) {
	switch c.kind {
	case kindHold:
		st.hold(c.assignment, t)
	case kindRelease:
		st.release(c.key, c.at, t)
	case kindQuarantine:
		st.quarantine(c.addr, t)
	case kindClear:
		if e, ok := st.addrs[c.addr.IP]; ok && e.Quarantined {
			e.Quarantined = false
			t.ip(c.addr.IP)
		}
	case kindCursor:
		st.cursors[familySlot(ipsource.Family(c.addr.IP))] = c.addr.IP
	case kindSetUnproven:
		if st.unproven != c.unproven {
			st.unproven = c.unproven
			t.Whole = true
		}
	case kindPrune:
		st.prune(c.at)
	case kindDrop:
		if e, ok := st.addrs[c.addr.IP]; ok && e.Free(c.at, st.cooldown) {
			delete(st.addrs, c.addr.IP)
			delete(st.marked, c.addr.IP)
		}
	case kindRepool:
		st.repool(c.addr, c.at, t)
	case kindNoteDeleted:
		st.noteDeleted(c.key, c.at, t)
	case kindForgetDeleted:
		if _, ok := st.deleted[c.key]; ok {
			delete(st.deleted, c.key)
			t.deleted(c.key)
		}
	case kindConfirm:
		if a, ok := st.assignments[c.key]; ok && a.ListedAt.IsZero() {
			a.ListedAt = c.at
			t.key(c.key)
		}
	}
}

func (st *State) hold(a *Assignment, t *Touched) {
	for i := range a.count() {
		addr := a.address(i)
		e, ok := st.addrs[addr.IP]
		if !ok {
			e = &Entry{Addr: addr}
			st.addrs[addr.IP] = e
		}
		e.Held, e.Holder, e.Quarantined = true, a.Key, false
		t.ip(addr.IP)
	}
	st.assignments[a.Key] = a
	t.key(a.Key)
}

func (st *State) release(key Key, at time.Time, t *Touched) {
	a, ok := st.assignments[key]
	if !ok {
		return
	}
	delete(st.assignments, key)
	for i := range a.count() {
		ip := a.address(i).IP
		if e, ok := st.addrs[ip]; ok && e.Held && e.Holder == key {
			e.Held, e.Holder, e.ReleasedAt = false, Key{}, at
			st.marked[ip] = struct{}{}
		}
		t.ip(ip)
	}
	t.key(key)
}

func (st *State) quarantine(addr ipsource.Address, t *Touched) {
	e, ok := st.addrs[addr.IP]
	if !ok {
		e = &Entry{Addr: addr}
		st.addrs[addr.IP] = e
	}
	if e.Quarantined {
		return
	}
	e.Quarantined = true
	st.marked[addr.IP] = struct{}{}
	t.ip(addr.IP)
}

func (st *State) prune(now time.Time) {
	for ip := range st.marked {
		e, ok := st.addrs[ip]
		switch {
		case !ok:
			delete(st.marked, ip)
		case e.Held || e.Quarantined || e.Cooling(now, st.cooldown):
		default:
			delete(st.marked, ip)
			delete(st.addrs, ip)
		}
	}
}

func (st *State) repool(addr ipsource.Address, now time.Time, t *Touched) {
	e, ok := st.addrs[addr.IP]
	if !ok || e.Addr == addr {
		return
	}
	e.Addr = addr
	if e.Held {
		st.assignments[e.Holder].setAddress(addr)
	}
	// Only held, cooling and quarantined addresses are recorded, so
	// only their record changes.
	if st.recorded(e, now) {
		t.ip(addr.IP)
	}
}

// recorded reports whether a snapshot taken at now lists e: held, cooling,
// or quarantined (while unproven every address is quarantined on arrival
// anyway; only a quarantine that outlives it needs recording).
func (st *State) recorded(e *Entry, now time.Time) bool {
	return e.Held || e.Cooling(now, st.cooldown) || (e.Quarantined && !st.unproven)
}
