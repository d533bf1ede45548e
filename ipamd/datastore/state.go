package datastore

import (
	"cmp"
	"net/netip"
	"slices"
	"time"

	"github.com/sandboxipam/sandboxipam/ipamd/ipsource"
)

// entry is what the store knows about one address.
type entry struct {
	addr ipsource.Address
	// inPool is false for an address the pool no longer has but an
	// assignment still holds, or that is cooling after leaving the pool.
	inPool bool
	// quarantined addresses are never handed out: after a lost
	// checkpoint nobody can say whether a pod holds them.
	quarantined bool
	// holder is the key of the assignment holding the address, if held.
	holder     Key
	held       bool
	releasedAt time.Time
}

// cooling reports whether a released address still waits out its cooldown.
func (e *entry) cooling(now time.Time, cooldown time.Duration) bool {
	return !e.held && !e.releasedAt.IsZero() && now.Before(e.releasedAt.Add(cooldown))
}

// free reports whether nothing keeps the address from a pod but the pool.
func (e *entry) free(now time.Time, cooldown time.Duration) bool {
	return !e.quarantined && !e.held && !e.cooling(now, cooldown)
}

// entryLocked returns ip's entry, making one (for a free pool address, or
// one outside the pool) when there is none.
func (s *Store) entryLocked(ip netip.Addr, addr ipsource.Address) *entry {
	e, ok := s.addrs[ip]
	if ok {
		return e
	}
	e = &entry{addr: addr}
	if p := s.rangeForLocked(ip); p != nil {
		e.inPool, e.addr = true, p.address(ip)
	}
	s.addrs[ip] = e
	return e
}

// holdLocked records a as the holder of its addresses.
func (s *Store) holdLocked(a *Assignment) {
	for _, addr := range a.All() {
		e := s.entryLocked(addr.IP, addr)
		e.held, e.holder, e.quarantined = true, a.Key, false
		s.dirtyLocked(addr.IP, a.Key)
	}
	s.assignments[a.Key] = a
}

// releaseLocked drops the assignment under key and starts the cooldown of
// its addresses (one per family), released together.
func (s *Store) releaseLocked(key Key, now time.Time) (Assignment, bool) {
	a, ok := s.assignments[key]
	if !ok {
		return Assignment{}, false
	}
	delete(s.assignments, key)
	for _, addr := range a.All() {
		if e, ok := s.addrs[addr.IP]; ok && e.held && e.holder == key {
			e.held, e.holder, e.releasedAt = false, Key{}, now
			s.marked[addr.IP] = struct{}{}
		}
		s.dirtyLocked(addr.IP, key)
	}
	return *a, true
}

// pruneLocked unmarks addresses whose cooldown is over and forgets them:
// a free pool address has no entry, and one outside the pool that nobody
// holds leaves nothing to remember.
func (s *Store) pruneLocked(now time.Time) {
	for ip := range s.marked {
		e, ok := s.addrs[ip]
		switch {
		case !ok:
			delete(s.marked, ip)
		case e.held || e.quarantined || e.cooling(now, s.cooldown):
		default:
			delete(s.marked, ip)
			delete(s.addrs, ip)
		}
	}
}

// count is one group and family's share of the pool, by state.
type count struct{ total, held, cooling, quarantined uint64 }

// countLocked counts the pool by group and family: sizes from the blocks,
// taken addresses from the entries, so the cost grows with what is taken,
// never with the size of a block. While the store is unproven every pool
// address nobody holds counts as quarantined.
func (s *Store) countLocked() map[[2]string]*count {
	now := s.now()
	out := map[[2]string]*count{}
	get := func(group, family string) *count {
		k := [2]string{group, family}
		c, ok := out[k]
		if !ok {
			c = &count{}
			out[k] = c
		}
		return c
	}
	for _, p := range s.ranges {
		if p.retiring {
			continue
		}
		c := get(p.r.Group, p.family())
		c.total = satAdd(c.total, p.size)
	}
	for ip, e := range s.addrs {
		if !e.inPool || s.retiringLocked(ip) {
			continue
		}
		c := get(e.addr.Group, ipsource.Family(ip))
		switch {
		case e.held:
			c.held++
		case e.quarantined || s.unproven:
			c.quarantined++
		case e.cooling(now, s.cooldown):
			c.cooling++
		}
	}
	if s.unproven {
		for _, c := range out {
			c.quarantined = c.total - c.held
		}
	}
	return out
}

func (s *Store) statsLocked() Stats {
	st := Stats{Assigned: len(s.assignments)}
	var total, held, cooling, quarantined uint64
	for _, c := range s.countLocked() {
		total, held = satAdd(total, c.total), satAdd(held, c.held)
		cooling, quarantined = satAdd(cooling, c.cooling), satAdd(quarantined, c.quarantined)
	}
	st.Total, st.Cooling, st.Unproven = clampInt(total), clampInt(cooling), clampInt(quarantined)
	st.Free = clampInt(freeOf(total, held+cooling+quarantined, s.unproven))
	return st
}

// Stats counts the pool's addresses by state.
func (s *Store) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.statsLocked()
}

// Lookup returns the assignment under key.
func (s *Store) Lookup(key Key) (Assignment, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a, ok := s.assignments[key]
	if !ok {
		return Assignment{}, false
	}
	return *a, true
}

// Assignments returns a copy of every assignment, sorted by key.
func (s *Store) Assignments() []Assignment {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Assignment, 0, len(s.assignments))
	for _, a := range s.assignments {
		out = append(out, *a)
	}
	sortAssignments(out)
	return out
}

func sortAssignments(as []Assignment) {
	slices.SortFunc(as, func(a, b Assignment) int { return compareKeys(a.Key, b.Key) })
}

func compareKeys(a, b Key) int {
	return cmp.Or(cmp.Compare(a.Network, b.Network), cmp.Compare(a.SandboxID, b.SandboxID), cmp.Compare(a.IfName, b.IfName))
}

// retiringLocked reports whether ip is in a retiring block: counted in
// that block alone (Ranges), never in the pool's totals.
func (s *Store) retiringLocked(ip netip.Addr) bool {
	p := s.rangeForLocked(ip)
	return p != nil && p.retiring
}
