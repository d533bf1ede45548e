package datastore

// Counting the pool by state, and the reads of the assignments, over the
// state (package state) and the pool's blocks (ranges.go).

import (
	"net/netip"
	"time"

	"github.com/sandboxipam/sandboxipam/ipamd/datastore/state"
	"github.com/sandboxipam/sandboxipam/ipamd/ipsource"
)

// releaseLocked drops the assignment under key and starts the cooldown of
// its addresses (one per family), released together.
func (s *Store) releaseLocked(key Key, now time.Time) (Assignment, bool) {
	a, ok := s.st.Lookup(key)
	if !ok {
		return Assignment{}, false
	}
	s.apply(state.Release(key, now))
	return a, true
}

// count is one group and family's share of the pool, by state.
type count struct{ total, held, cooling, quarantined uint64 }

// countLocked counts the pool by group and family: sizes from the blocks,
// taken addresses from the entries, so the cost grows with what is taken,
// never with the size of a block. While the store is unproven every pool
// address nobody holds counts as quarantined. A retiring block is counted
// in that block alone (Ranges), never in the pool's totals.
func (s *Store) countLocked() map[[2]string]*count {
	now, unproven := s.now(), s.st.Unproven()
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
	for ip, e := range s.st.Addresses() {
		if p := s.rangeForLocked(ip); p == nil || p.retiring {
			continue
		}
		c := get(e.Addr.Group, ipsource.Family(ip))
		switch {
		case e.Held:
			c.held++
		case e.Quarantined || unproven:
			c.quarantined++
		case e.Cooling(now, s.cooldown):
			c.cooling++
		}
	}
	if unproven {
		for _, c := range out {
			c.quarantined = c.total - c.held
		}
	}
	return out
}

func (s *Store) statsLocked() Stats {
	st := Stats{Assigned: s.st.Len()}
	var total, held, cooling, quarantined uint64
	for _, c := range s.countLocked() {
		total, held = satAdd(total, c.total), satAdd(held, c.held)
		cooling, quarantined = satAdd(cooling, c.cooling), satAdd(quarantined, c.quarantined)
	}
	st.Total, st.Cooling, st.Quarantined = clampInt(total), clampInt(cooling), clampInt(quarantined)
	st.Free = clampInt(freeOf(total, held+cooling+quarantined, s.st.Unproven()))
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
	return s.st.Lookup(key)
}

// Assignments returns a copy of every assignment, sorted by key.
func (s *Store) Assignments() []Assignment {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.st.Sorted()
}

// addressFor is ip as the state or the pool knows it: its entry's, its
// block's, or bare.
func (s *Store) addressFor(ip netip.Addr) ipsource.Address {
	if e, ok := s.st.Entry(ip); ok {
		return e.Addr
	}
	if p := s.rangeForLocked(ip); p != nil {
		return p.address(ip)
	}
	return ipsource.Address{IP: ip}
}
