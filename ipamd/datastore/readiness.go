package datastore

import (
	"fmt"
	"slices"
	"strings"
)

// Readiness answers "can ipamd hand out an address to a new pod now, and
// if not, why". The store owns the answer: Store.Readiness judges with the
// very fields Assign refuses on, in Assign's order, so the CNI STATUS verb,
// /readyz and ipamctl (which all ask it, through the daemon) can never say
// ready while an ADD for a new pod is refused. The daemon adds only what the
// store cannot see: whether the CNI socket accepts and the conflist is
// written (Add).
type Readiness struct {
	// Free is how many new pods the pool can take now: an ADD takes one
	// address of each family, so the family with the fewest free decides.
	Free uint64
	// Reasons names, one line each, everything that keeps an ADD for a
	// new pod from getting an address now; none means ready.
	Reasons []string
}

// Ready reports whether an ADD for a new pod would get an address now.
func (r Readiness) Ready() bool { return len(r.Reasons) == 0 }

// Add records one more reason an ADD would be refused.
func (r *Readiness) Add(reason string) { r.Reasons = append(r.Reasons, reason) }

// Readiness judges whether an ADD for a new key would get an address now,
// and names every reason it would not: the store closed, unproven (no
// trusted checkpoint, and the runtime and the node have not accounted for
// every address), fenced by its IP source, its pool waiting for a first
// range, or no free address of a family (waiting for the pool to grow, or
// exhausted). A repeated ADD for a key that holds an address is answered
// whatever this says.
func (s *Store) Readiness() Readiness {
	s.mu.Lock()
	defer s.mu.Unlock()
	var r Readiness
	if s.closed {
		r.Add("the datastore is closed: ipamd is stopping")
		return r
	}
	if s.st.Unproven() {
		r.Add("the datastore is unproven (no trusted checkpoint): waiting for " + waitingPhrase(s.waitingLocked()))
	}
	if s.fenced != "" {
		r.Add("no new address is handed out: " + s.fenced)
	}
	families := s.familiesLocked()
	if s.poolWaiting != "" && len(families) == 0 {
		r.Add("the pool has no range yet: waiting for " + s.poolWaiting)
	}
	free, short := freePerADD(s.rangesLocked())
	r.Free = free
	if s.st.Unproven() || len(families) == 0 {
		// Nothing is free while unproven, and a pool without a range
		// is not exhausted: the reasons above already say why.
		return r
	}
	if free == 0 {
		r.Add(exhaustedReason(short, s.growthWaiting))
	}
	return r
}

// readinessNames is how many unaccounted sandboxes a readiness reason
// names (an ADD's refusal names proof.RefusalNames): enough for an
// operator to see which pods to look at, bounded because STATUS carries
// the reason too. ipamctl check lists them all.
const readinessNames = 5

// waitingPhrase names what an unproven store waits for: the unaccounted
// sandboxes in sorted order (so which show does not depend on the order
// the runtime listed them in), or, before any, a runtime listing.
func waitingPhrase(waiting []string) string {
	w := slices.Sorted(slices.Values(waiting))
	switch {
	case len(w) == 0:
		return "a runtime listing"
	case len(w) <= readinessNames:
		return strings.Join(w, "; ")
	default:
		return fmt.Sprintf("%s (and %d more; ipamctl check lists them all)", strings.Join(w[:readinessNames], "; "), len(w)-readinessNames)
	}
}

// exhaustedReason says which family has no free address and, when the IP
// source is getting more (growthWaiting), what the ADD waits for; Assign
// refuses with the same words.
func exhaustedReason(short, growthWaiting string) string {
	what := "address pool exhausted"
	if short != "" {
		what = fmt.Sprintf("address pool exhausted: no free %s address", short)
	}
	if growthWaiting != "" {
		return what + "; waiting for " + growthWaiting
	}
	return what
}

// freePerADD is how many ADDs the ranges can answer now: an ADD takes one
// address of each family (two for a dual-stack pool), so the family with
// the fewest free decides; short names a family that has none.
func freePerADD(ranges []RangeInfo) (free uint64, short string) {
	byFamily := map[string]uint64{}
	for _, r := range ranges {
		if r.Retiring {
			continue
		}
		byFamily[r.Family] = satAdd(byFamily[r.Family], r.Free)
	}
	first := true
	for _, family := range []string{"ipv4", "ipv6"} {
		n, ok := byFamily[family]
		if !ok {
			continue
		}
		if first || n < free {
			free, first = n, false
		}
		if n == 0 && short == "" {
			short = family
		}
	}
	return free, short
}
