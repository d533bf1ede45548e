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

// allocatable reports whether the address may be handed to a pod now.
func (e *entry) allocatable(now time.Time, cooldown time.Duration) bool {
	return e.inPool && !e.quarantined && !e.held && !e.cooling(now, cooldown)
}

// sortedPoolLocked returns the pool's addresses in order, rebuilding the
// cached order after the pool changed.
func (s *Store) sortedPoolLocked() []netip.Addr {
	if s.order != nil {
		return s.order
	}
	order := make([]netip.Addr, 0, len(s.addrs))
	for ip, e := range s.addrs {
		if e.inPool {
			order = append(order, ip)
		}
	}
	slices.SortFunc(order, netip.Addr.Compare)
	s.order = order
	return order
}

// pickLocked chooses the next address round-robin: the first allocatable
// address after the one handed out last, wrapping around. Walking on from
// the cursor rather than taking the lowest free address keeps a just-cooled
// address from being reused first, and is deterministic given the state.
func (s *Store) pickLocked(now time.Time) (*entry, bool) {
	order := s.sortedPoolLocked()
	if len(order) == 0 {
		return nil, false
	}
	start := 0
	if s.cursor.IsValid() {
		start, _ = slices.BinarySearchFunc(order, s.cursor, func(a, b netip.Addr) int {
			if a.Compare(b) <= 0 {
				return -1
			}
			return 1
		})
	}
	for i := range order {
		e := s.addrs[order[(start+i)%len(order)]]
		if e.allocatable(now, s.cooldown) {
			return e, true
		}
	}
	return nil, false
}

// holdLocked records a as the holder of its address.
func (s *Store) holdLocked(a *Assignment) {
	e, ok := s.addrs[a.Address.IP]
	if !ok {
		e = &entry{addr: a.Address}
		s.addrs[a.Address.IP] = e
	}
	e.held, e.holder, e.quarantined = true, a.Key, false
	s.assignments[a.Key] = a
	s.dirtyLocked(a.Address.IP, a.Key)
}

// releaseLocked drops the assignment under key and starts its address's
// cooldown.
func (s *Store) releaseLocked(key Key, now time.Time) (Assignment, bool) {
	a, ok := s.assignments[key]
	if !ok {
		return Assignment{}, false
	}
	delete(s.assignments, key)
	if e, ok := s.addrs[a.Address.IP]; ok && e.held && e.holder == key {
		e.held, e.holder, e.releasedAt = false, Key{}, now
		s.marked[a.Address.IP] = struct{}{}
	}
	s.dirtyLocked(a.Address.IP, key)
	return *a, true
}

// pruneLocked unmarks addresses whose cooldown is over, and forgets those
// outside the pool that nobody holds: nothing is left to remember about
// them. Every address outside the pool is held or marked.
func (s *Store) pruneLocked(now time.Time) {
	for ip := range s.marked {
		e, ok := s.addrs[ip]
		switch {
		case !ok:
			delete(s.marked, ip)
		case e.held || e.quarantined || e.cooling(now, s.cooldown):
		default:
			delete(s.marked, ip)
			if !e.inPool {
				delete(s.addrs, ip)
			}
		}
	}
}

func (s *Store) statsLocked() Stats {
	now := s.now()
	st := Stats{Assigned: len(s.assignments)}
	for _, e := range s.addrs {
		if !e.inPool {
			continue
		}
		st.Total++
		switch {
		case e.held:
		case e.quarantined:
			st.Unproven++
		case e.cooling(now, s.cooldown):
			st.Cooling++
		default:
			st.Free++
		}
	}
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
