package datastore

import (
	"cmp"
	"slices"
	"time"

	"github.com/sandboxipam/sandboxipam/ipamd/ipsource"
)

// PoolView is the one read model of the pool: taken under one lock, so
// its numbers add up, it feeds the metrics (one per scrape), the
// introspection endpoints and, through them, ipamctl. Stats, Census,
// Usage and Ranges are its parts.
type PoolView struct {
	// At is when it was taken (the store's clock).
	At time.Time
	// Stats counts the pool's addresses by state.
	Stats Stats
	// Groups counts each group and family of the pool, sorted by group,
	// then family; retiring blocks are left out (they are in Ranges).
	Groups []GroupCount
	// Ranges lists the pool's blocks in address order.
	Ranges []RangeInfo
	// Proof is the store's proof state.
	Proof ProofState
}

// GroupCount is one group and family's share of the pool. Counts
// saturate at MaxUint64 (an IPv6 /64 holds 2^64 addresses).
type GroupCount struct {
	Group, Family                         string
	Total, Assigned, Cooling, Quarantined uint64
	// Free is what nothing keeps from a pod: none while the store is
	// unproven. Computed here once, so every reader says the same.
	Free uint64
}

// View takes the pool's read model.
func (s *Store) View() PoolView {
	s.mu.Lock()
	defer s.mu.Unlock()
	v := PoolView{At: s.now(), Stats: s.statsLocked(), Ranges: s.rangesLocked(),
		Proof: ProofState{Unproven: s.st.Unproven(), Waiting: s.waitingLocked()}}
	v.Proof.Quarantined = v.Stats.Quarantined
	unproven := s.st.Unproven()
	for k, c := range s.countLocked() {
		v.Groups = append(v.Groups, GroupCount{Group: k[0], Family: k[1], Total: c.total, Assigned: c.held, Cooling: c.cooling, Quarantined: c.quarantined,
			Free: freeOf(c.total, satAdd(satAdd(c.held, c.cooling), c.quarantined), unproven)})
	}
	slices.SortFunc(v.Groups, func(a, b GroupCount) int {
		return cmp.Or(cmp.Compare(a.Group, b.Group), cmp.Compare(a.Family, b.Family))
	})
	return v
}

// Census counts the pool's addresses by group, family and state. Every
// state of every (group, family) pair in the pool is present, zero
// included, so a gauge per key never vanishes from a scrape. Counts
// saturate at MaxInt (Ranges has the exact size of each block).
func (v PoolView) Census() map[CensusKey]int {
	out := map[CensusKey]int{}
	for _, c := range v.Groups {
		quarantined := StateQuarantined
		if v.Proof.Unproven {
			quarantined = StateUnproven
		}
		for _, st := range []AddressState{StateFree, StateAssigned, StateCooling, StateQuarantined, StateUnproven} {
			out[CensusKey{Group: c.Group, Family: c.Family, State: st}] = 0
		}
		out[CensusKey{Group: c.Group, Family: c.Family, State: StateFree}] = clampInt(c.Free)
		out[CensusKey{Group: c.Group, Family: c.Family, State: StateAssigned}] = clampInt(c.Assigned)
		out[CensusKey{Group: c.Group, Family: c.Family, State: StateCooling}] = clampInt(c.Cooling)
		out[CensusKey{Group: c.Group, Family: c.Family, State: quarantined}] = clampInt(c.Quarantined)
	}
	return out
}

// ByGroup sums Groups over the families of each group (Family is empty),
// sorted by group. Counts saturate at MaxUint64.
func (v PoolView) ByGroup() []GroupCount {
	var out []GroupCount
	for _, c := range v.Groups {
		if n := len(out); n == 0 || out[n-1].Group != c.Group {
			out = append(out, GroupCount{Group: c.Group})
		}
		g := &out[len(out)-1]
		g.Total, g.Assigned = satAdd(g.Total, c.Total), satAdd(g.Assigned, c.Assigned)
		g.Cooling, g.Quarantined = satAdd(g.Cooling, c.Cooling), satAdd(g.Quarantined, c.Quarantined)
		g.Free = satAdd(g.Free, c.Free)
	}
	return out
}

// Usage reports, per group, the pool's size, assigned and cooling
// addresses, sorted by group. Counts saturate at MaxInt.
func (v PoolView) Usage() []ipsource.GroupUsage {
	out := []ipsource.GroupUsage{}
	for _, g := range v.ByGroup() {
		out = append(out, ipsource.GroupUsage{Group: g.Group, Total: clampInt(g.Total), Assigned: clampInt(g.Assigned), Cooling: clampInt(g.Cooling)})
	}
	return out
}
