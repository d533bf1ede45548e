package state

// The state in package checkpoint's forms: a whole snapshot, the journal
// record of a Touched set, and the state rebuilt from what Load read.

import (
	"maps"
	"net/netip"
	"slices"
	"time"

	"github.com/sandboxipam/sandboxipam/ipamd/checkpoint"
	"github.com/sandboxipam/sandboxipam/ipamd/ipsource"
)

// Snapshot copies the whole state into the checkpoint form, as of now,
// in a deterministic order. The podCIDR source's record is the store's to
// add. Apply Prune(now) first so that it lists no finished cooldown's
// entry.
func (st *State) Snapshot(now time.Time) checkpoint.File {
	f := checkpoint.File{
		SavedAt:     now,
		Unproven:    st.unproven,
		Cursors:     st.cursorList(),
		Addresses:   make([]checkpoint.Address, 0, len(st.assignments)+len(st.marked)),
		Assignments: make([]checkpoint.Assignment, 0, len(st.assignments)),
		Deleted:     st.deletedRecords(),
	}
	keys := slices.SortedFunc(maps.Keys(st.assignments), CompareKeys)
	for _, k := range keys {
		a := st.assignments[k]
		for i := range a.count() {
			f.Addresses = append(f.Addresses, addressRecord(a.address(i)))
		}
		f.Assignments = append(f.Assignments, assignmentRecord(a))
	}
	for _, ip := range slices.SortedFunc(maps.Keys(st.marked), netip.Addr.Compare) {
		e, ok := st.addrs[ip]
		if !ok || e.Held {
			continue
		}
		if c, ok := st.unheldRecord(e, now); ok {
			f.Addresses = append(f.Addresses, c)
		}
	}
	return f
}

// Record turns what t holds into a journal record, each touched address
// and key as it is now, set or dropped, and resets t. A Touched that is
// Whole needs a snapshot instead: the caller decides by t.Whole first.
func (st *State) Record(t *Touched, now time.Time) checkpoint.Record {
	r := checkpoint.Record{Unproven: st.unproven, Cursors: st.cursorList()}
	for ip := range t.IPs {
		if c, ok := st.addressRecord(ip, now); ok {
			r.Addresses = append(r.Addresses, c)
		} else {
			r.DropAddresses = append(r.DropAddresses, ip)
		}
	}
	for k := range t.Keys {
		if a, ok := st.assignments[k]; ok {
			r.Assignments = append(r.Assignments, assignmentRecord(a))
		} else {
			r.DropAssignments = append(r.DropAssignments, checkpoint.AssignmentKey{Network: k.Network, SandboxID: k.SandboxID, IfName: k.IfName})
		}
	}
	if len(t.Deleted) > 0 {
		st.recordDeleted(t, &r)
	}
	t.Reset()
	sortRecord(r)
	return r
}

// sortRecord puts a record's lists in address and key order, in place (a
// record is built on the commit path: no copy), so that the same changes
// always make the same record.
func sortRecord(r checkpoint.Record) {
	slices.SortFunc(r.Addresses, func(a, b checkpoint.Address) int { return a.IP.Compare(b.IP) })
	slices.SortFunc(r.DropAddresses, netip.Addr.Compare)
	key := func(a checkpoint.Assignment) Key {
		return Key{Network: a.Network, SandboxID: a.SandboxID, IfName: a.IfName}
	}
	slices.SortFunc(r.Assignments, func(a, b checkpoint.Assignment) int { return CompareKeys(key(a), key(b)) })
	slices.SortFunc(r.DropAssignments, func(a, b checkpoint.AssignmentKey) int {
		return CompareKeys(Key(a), Key(b))
	})
}

// addressRecord is what a snapshot taken now would record for ip, as
// Snapshot decides it, or false when it would not list ip.
func (st *State) addressRecord(ip netip.Addr, now time.Time) (checkpoint.Address, bool) {
	e, ok := st.addrs[ip]
	if !ok {
		return checkpoint.Address{}, false
	}
	if e.Held {
		if a, ok := st.assignments[e.Holder]; ok {
			for i := range a.count() {
				if addr := a.address(i); addr.IP == ip {
					return addressRecord(addr), true
				}
			}
		}
		return addressRecord(e.Addr), true
	}
	return st.unheldRecord(e, now)
}

// unheldRecord is the record of an address nobody holds: cooling, or a
// quarantine that outlives the unproven state (while unproven every
// address is quarantined on arrival anyway).
func (st *State) unheldRecord(e *Entry, now time.Time) (checkpoint.Address, bool) {
	cooling := e.Cooling(now, st.cooldown)
	quarantined := e.Quarantined && !st.unproven
	if !cooling && !quarantined {
		return checkpoint.Address{}, false
	}
	c := addressRecord(e.Addr)
	c.Quarantined = quarantined
	if cooling {
		c.ReleasedAt = e.ReleasedAt
	}
	return c, true
}

func addressRecord(a ipsource.Address) checkpoint.Address {
	return checkpoint.Address{IP: a.IP, Subnet: a.Subnet, Gateway: a.Gateway, Group: a.Group}
}

func assignmentRecord(a *Assignment) checkpoint.Assignment {
	return checkpoint.Assignment{
		Network: a.Network, SandboxID: a.SandboxID, IfName: a.IfName,
		PodName: a.Pod.Name, Namespace: a.Pod.Namespace, UID: a.Pod.UID,
		IPs: a.IPs(), AssignedAt: a.AssignedAt, ListedAt: a.ListedAt, Wiring: string(a.Wiring),
		NetNS: a.NetNS.Path, NetNSDev: a.NetNS.Dev, NetNSIno: a.NetNS.Ino,
	}
}

// cursorList is the cursors as the checkpoint records them.
func (st *State) cursorList() []netip.Addr {
	var out []netip.Addr
	for _, c := range st.cursors {
		if c.IsValid() {
			out = append(out, c)
		}
	}
	return out
}

// FromFile rebuilds the state from a verified checkpoint (package
// checkpoint's Load has replayed the journal onto the snapshot and
// checked that every assigned address is listed). Its addresses are not
// in the pool until a source adds them again; the node record is the
// store's.
func FromFile(f checkpoint.File, cooldown time.Duration) *State {
	st := New(cooldown)
	st.unproven = f.Unproven
	for _, c := range f.Cursors {
		st.cursors[familySlot(ipsource.Family(c))] = c
	}
	for _, c := range f.Addresses {
		st.addrs[c.IP] = &Entry{
			Addr:        ipsource.Address{IP: c.IP, Subnet: c.Subnet, Gateway: c.Gateway, Group: c.Group},
			Quarantined: c.Quarantined, ReleasedAt: c.ReleasedAt,
		}
		if c.Quarantined || !c.ReleasedAt.IsZero() {
			st.marked[c.IP] = struct{}{}
		}
	}
	for _, d := range f.Deleted {
		st.deleted[Key{Network: d.Network, SandboxID: d.SandboxID, IfName: d.IfName}] = d.At
	}
	var loaded Touched
	for _, c := range f.Assignments {
		a := &Assignment{
			Key:        Key{Network: c.Network, SandboxID: c.SandboxID, IfName: c.IfName},
			Pod:        Pod{Name: c.PodName, Namespace: c.Namespace, UID: c.UID},
			Address:    st.addrs[c.IPs[0]].Addr,
			AssignedAt: c.AssignedAt,
			ListedAt:   c.ListedAt,
			Wiring:     Wiring(c.Wiring),
			NetNS:      NetNS{Path: c.NetNS, Dev: c.NetNSDev, Ino: c.NetNSIno},
		}
		for _, ip := range c.IPs[1:] {
			a.Extra = append(a.Extra, st.addrs[ip].Addr)
		}
		// What was loaded is on disk: nothing of it is touched.
		st.Apply(Hold(a), &loaded)
	}
	return st
}
