package datastore

import "math"

// AddressState is one address's state for the metrics.
type AddressState string

// Address states. Quarantined is an address a pod holds while the store
// records it free or under another sandbox; Unproven is every quarantined
// address while the store has no trusted checkpoint and is not proven yet.
const (
	StateFree        AddressState = "free"
	StateAssigned    AddressState = "assigned"
	StateCooling     AddressState = "cooling"
	StateQuarantined AddressState = "quarantined"
	StateUnproven    AddressState = "unproven"
)

// CensusKey groups the pool's addresses for Census.
type CensusKey struct {
	Group  string
	Family string // "ipv4" or "ipv6"
	State  AddressState
}

// freeOf is total less taken; a saturated total (an IPv6 /64) stays
// saturated, except while unproven, when nothing is free.
func freeOf(total, taken uint64, unproven bool) uint64 {
	switch {
	case unproven:
		return 0
	case total == math.MaxUint64:
		return total
	}
	return total - min(total, taken)
}

// Census counts the pool's addresses by group, family and state. Every
// state of every (group, family) pair in the pool is present, zero
// included, so a gauge per key never vanishes from a scrape. Counts
// saturate at MaxInt (an IPv6 /64 holds 2^64 addresses; Ranges has the
// exact size of each block).
func (s *Store) Census() map[CensusKey]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[CensusKey]int{}
	for k, c := range s.countLocked() {
		group, family := k[0], k[1]
		quarantined := StateQuarantined
		if s.unproven {
			quarantined = StateUnproven
		}
		free := freeOf(c.total, c.held+c.cooling+c.quarantined, s.unproven)
		for _, st := range []AddressState{StateFree, StateAssigned, StateCooling, StateQuarantined, StateUnproven} {
			out[CensusKey{Group: group, Family: family, State: st}] = 0
		}
		out[CensusKey{Group: group, Family: family, State: StateFree}] = clampInt(free)
		out[CensusKey{Group: group, Family: family, State: StateAssigned}] = clampInt(c.held)
		out[CensusKey{Group: group, Family: family, State: StateCooling}] = clampInt(c.cooling)
		out[CensusKey{Group: group, Family: family, State: quarantined}] = clampInt(c.quarantined)
	}
	return out
}
