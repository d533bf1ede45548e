package datastore

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

// Census counts the pool's addresses by group, family and state. Every
// state of every (group, family) pair in the pool is present, zero
// included, so a gauge per key never vanishes from a scrape.
func (s *Store) Census() map[CensusKey]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	out := map[CensusKey]int{}
	for _, e := range s.addrs {
		if !e.inPool {
			continue
		}
		family := "ipv4"
		if e.addr.IP.Is6() && !e.addr.IP.Is4In6() {
			family = "ipv6"
		}
		state := StateFree
		switch {
		case e.held:
			state = StateAssigned
		case e.quarantined && s.unproven:
			state = StateUnproven
		case e.quarantined:
			state = StateQuarantined
		case e.cooling(now, s.cooldown):
			state = StateCooling
		}
		for _, st := range []AddressState{StateFree, StateAssigned, StateCooling, StateQuarantined, StateUnproven} {
			k := CensusKey{Group: e.addr.Group, Family: family, State: st}
			if _, ok := out[k]; !ok {
				out[k] = 0
			}
		}
		out[CensusKey{Group: e.addr.Group, Family: family, State: state}]++
	}
	return out
}
