// Package proof decides, as pure functions of one join.View, what a
// runtime listing proves to ipamd's datastore: which lost assignments an
// unproven store adopts (Adoptions), and which pool addresses a pod holds
// while the store records them otherwise, to be quarantined (Foreign).
//
// The datastore (Store.Observe) joins the evidence with its assignments
// under its lock, asks these two questions, and applies the answers to
// its state as change records (package state: Hold for an adoption,
// Quarantine and Clear, SetUnproven): the narrow interface is the view
// in, decisions out. Tracker (tracker.go) keeps what an unproven store
// remembers between listings: the DELs that came meanwhile (Going) and
// what the last listing left unaccounted for (Listed, Waiting). No I/O,
// no clock.
//
// See docs/architecture.md (the life of a reconcile pass).
package proof

import (
	"cmp"
	"net/netip"
	"slices"

	"github.com/sandboxipam/sandboxipam/ipamd/join"
)

// Adoption is one assignment an unproven store rebuilds.
type Adoption struct {
	SandboxID string
	// IPs holds one address per family, IPv4 first, as Assign hands them.
	IPs []netip.Addr
	// Source is the evidence of its first address, for the log.
	Source string
}

// Adoptions picks, from the addresses no assignment records, one per
// family for each sandbox that has no assignment under network and
// ifName, running sandboxes first, then by sandbox ID, then in the
// evidence's order (a sandbox's primary address first). An address goes
// to one sandbox only; a sandbox's further addresses of a family it has
// are left to the quarantine. Going holds the sandboxes whose DEL came
// after the listing started: they are going, and their addresses are free
// once the listing that no longer shows them proves the pool.
func Adoptions(view join.View, network, ifName string, going map[string]struct{}) []Adoption {
	var out []Adoption
	index := map[string]int{}
	chosen := map[netip.Addr]bool{}
	for _, c := range candidates(view) {
		if chosen[c.ip] {
			continue
		}
		if _, assigned := view.Assigned(network, c.SandboxID, ifName); assigned {
			continue
		}
		if _, ok := going[c.SandboxID]; ok {
			continue
		}
		i, ok := index[c.SandboxID]
		switch {
		case !ok:
			index[c.SandboxID] = len(out)
			out = append(out, Adoption{SandboxID: c.SandboxID, IPs: []netip.Addr{c.ip}, Source: c.Source})
		case slices.ContainsFunc(out[i].IPs, func(ip netip.Addr) bool { return ip.Is4() == c.ip.Is4() }):
			continue
		default:
			out[i].IPs = append(out[i].IPs, c.ip)
		}
		chosen[c.ip] = true
	}
	for _, a := range out {
		slices.SortStableFunc(a.IPs, func(x, y netip.Addr) int { return cmp.Compare(family(x), family(y)) })
	}
	return out
}

func family(ip netip.Addr) int {
	if ip.Is4() {
		return 4
	}
	return 6
}

// candidate is a sandbox's claim on an address no assignment records.
type candidate struct {
	join.Claim
	ip netip.Addr
}

// candidates returns the sandboxes' claims on unrecorded addresses,
// running sandboxes first, then by sandbox ID, then in claim order.
func candidates(view join.View) []candidate {
	var cs []candidate
	for _, row := range view.Addresses() {
		if len(row.Recorded) > 0 {
			continue
		}
		for _, c := range row.Claims {
			if c.SandboxID != "" {
				cs = append(cs, candidate{Claim: c, ip: row.IP})
			}
		}
	}
	slices.SortFunc(cs, func(a, b candidate) int {
		if a.Ready != b.Ready {
			if a.Ready {
				return -1
			}
			return 1
		}
		return cmp.Or(cmp.Compare(a.SandboxID, b.SandboxID), cmp.Compare(a.Order, b.Order))
	})
	return cs
}

// Foreign returns the pool addresses (inPool) whose row has a claim by
// another than the one assignment recording it, or any claim when none
// does, with the first such claim: each is quarantined.
func Foreign(view join.View, inPool func(netip.Addr) bool) map[netip.Addr]join.Claim {
	foreign := map[netip.Addr]join.Claim{}
	for _, row := range view.Addresses() {
		if !inPool(row.IP) {
			continue
		}
		if c, ok := row.Foreign(); ok {
			foreign[row.IP] = c
		}
	}
	return foreign
}
