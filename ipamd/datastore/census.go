package datastore

import "math"

// AddressState is one address's state for the metrics (PoolView.Census).
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
