package join

import (
	"net/netip"
	"slices"

	"github.com/sandboxipam/sandboxipam/runtime"
)

// Class says how the sources agree on one address.
type Class string

// Classes of an address row.
const (
	// Agreed: one assignment records it, and every claim is that
	// sandbox's.
	Agreed Class = "agreed"
	// Unclaimed: one assignment records it, and nothing on the node
	// claims it (ipamd/nodecheck says whether its pod link should).
	Unclaimed Class = "unclaimed"
	// Unrecorded: something on the node claims it, one holder, and no
	// assignment records it: a pod ipamd lost (adopted while unproven,
	// quarantined once proven) or a stray route.
	Unrecorded Class = "unrecorded"
	// Contested: two or more holders, recorded or claimed: never handed
	// out while that lasts.
	Contested Class = "contested"
)

// Claim is one piece of evidence, from the node, that someone holds an
// address.
type Claim struct {
	// SandboxID holds it; empty when only a pod link nobody owns shows it.
	SandboxID string
	// Link is the pod link whose route shows it, if that is the evidence.
	Link string
	// Ready: the sandbox runs (a link's claim is always ready).
	Ready bool
	// Source says where the evidence came from, for the log.
	Source string
	// Order is the claim's place among all of Join's claims, in the
	// order met (see AddressRow.Claims): a tie-break that keeps the
	// evidence's own order, a sandbox's primary address first.
	Order int
}

// Holder names who holds the address by this claim: "sandbox X", or the
// link (or the evidence) when no sandbox owns it.
func (c Claim) Holder() string {
	switch {
	case c.SandboxID != "":
		return "sandbox " + c.SandboxID
	case c.Link != "":
		return "link " + c.Link
	}
	return "unowned (" + c.Source + ")"
}

// AddressRow is one address: who records it and who claims it.
type AddressRow struct {
	IP netip.Addr
	// Recorded holds the sandbox IDs of the assignments holding it.
	Recorded []string
	// Claims is the node's evidence, in the order met: the runtime's
	// listing, the pod links (by name), then Input.Holdings.
	Claims []Claim
	Class  Class
}

// Holders returns, sorted and without repeats, everyone who holds the
// address by any source.
func (r AddressRow) Holders() []string {
	out := make([]string, 0, len(r.Recorded)+len(r.Claims))
	for _, id := range r.Recorded {
		out = append(out, "sandbox "+id)
	}
	for _, c := range r.Claims {
		out = append(out, c.Holder())
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Foreign returns the first claim whose holder is not the one assignment
// recording the address (any claim, when none does); false when the node
// agrees with ipamd.
func (r AddressRow) Foreign() (Claim, bool) {
	for _, c := range r.Claims {
		if len(r.Recorded) != 1 || c.SandboxID != r.Recorded[0] {
			return c, true
		}
	}
	return Claim{}, false
}

func joinAddresses(in Input, v View) []AddressRow {
	rows := make(map[netip.Addr]*AddressRow, len(in.Assignments)+len(in.Holdings))
	row := func(ip netip.Addr) *AddressRow {
		ip = ip.Unmap()
		r, ok := rows[ip]
		if !ok {
			r = &AddressRow{IP: ip}
			rows[ip] = r
		}
		return r
	}
	for _, a := range in.Assignments {
		for _, ip := range a.IPs {
			r := row(ip)
			r.Recorded = append(r.Recorded, a.SandboxID)
		}
	}
	order := 0
	claim := func(ip netip.Addr, c Claim) {
		if _, deleted := in.Deleted[c.SandboxID]; deleted && !c.Ready && c.SandboxID != "" {
			return // a stopped sandbox's report after its DEL: stale
		}
		c.Order = order
		order++
		r := row(ip)
		r.Claims = append(r.Claims, c)
	}
	for _, sr := range v.Sandboxes {
		for _, ip := range sr.Sandbox.IPs {
			claim(ip, Claim{SandboxID: sr.Sandbox.ID, Ready: sr.Sandbox.State == runtime.StateReady, Source: "runtime"})
		}
	}
	for _, l := range v.Links {
		for _, ip := range l.IPs {
			claim(ip, Claim{SandboxID: l.Owner, Link: l.Name, Ready: true, Source: "host route via " + l.Name})
		}
	}
	for _, h := range in.Holdings {
		claim(h.IP, Claim{SandboxID: h.SandboxID, Ready: h.Ready, Source: h.Source})
	}
	out := make([]AddressRow, 0, len(rows))
	for _, r := range rows {
		r.Class = classify(*r)
		out = append(out, *r)
	}
	slices.SortFunc(out, func(a, b AddressRow) int { return a.IP.Compare(b.IP) })
	return out
}

func classify(r AddressRow) Class {
	switch {
	case distinctHolders(r) > 1:
		return Contested
	case len(r.Recorded) == 0:
		return Unrecorded
	case len(r.Claims) == 0:
		return Unclaimed
	}
	return Agreed
}

// holderKey is Claim.Holder without building the string: a row is
// classified on every pass for every address.
type holderKey struct {
	kind int // 0 sandbox, 1 link, 2 unowned evidence
	name string
}

func (c Claim) holderKey() holderKey {
	switch {
	case c.SandboxID != "":
		return holderKey{0, c.SandboxID}
	case c.Link != "":
		return holderKey{1, c.Link}
	}
	return holderKey{2, c.Source}
}

// distinctHolders counts the row's holders, up to 2.
func distinctHolders(r AddressRow) int {
	n, first := 0, holderKey{}
	see := func(k holderKey) {
		switch {
		case n == 0:
			n, first = 1, k
		case k != first:
			n = 2
		}
	}
	for _, id := range r.Recorded {
		see(holderKey{0, id})
	}
	for _, c := range r.Claims {
		see(c.holderKey())
	}
	return n
}
