package datastore

// Adoption: an unproven store rebuilds the assignments of pods that hold
// addresses it has no record of.

import (
	"cmp"
	"log/slog"
	"net/netip"
	"slices"
	"time"

	"github.com/sandboxipam/sandboxipam/ipamd/ipsource"
	"github.com/sandboxipam/sandboxipam/ipamd/nodeview"
)

// adoptLocked makes an assignment for each sandbox holding an address
// that no assignment records (by the view), running sandboxes first: one
// address per family, as Assign hands them (a dual-stack pod's IPv4 and
// IPv6 address under its one key). A sandbox's further addresses are left
// to the quarantine.
func (s *Store) adoptLocked(ev Evidence, view nodeview.View) int {
	pods := make(map[string]Pod, len(ev.Holdings))
	for _, h := range ev.Holdings {
		if _, ok := pods[h.SandboxID]; !ok {
			pods[h.SandboxID] = h.Pod
		}
	}
	var order []Key
	found := map[Key]*adoption{}
	for _, c := range s.adoptable(ev, view) {
		key := Key{Network: ev.Network, SandboxID: c.SandboxID, IfName: ev.IfName}
		ad, ok := found[key]
		if !ok {
			found[key] = &adoption{a: &Assignment{Key: key, Pod: pods[c.SandboxID], Address: s.addressFor(c.ip),
				AssignedAt: ev.At, ListedAt: ev.At}, source: c.Source}
			order = append(order, key)
			continue
		}
		if !slices.ContainsFunc(ad.a.All(), func(x ipsource.Address) bool { return ipsource.Family(x.IP) == ipsource.Family(c.ip) }) {
			ad.a.Extra = append(ad.a.Extra, s.addressFor(c.ip))
		}
	}
	for _, key := range order {
		s.holdAdoptedLocked(found[key], ev.At)
	}
	return len(order)
}

type adoption struct {
	a      *Assignment
	source string
}

// candidate is a claim on one unrecorded address.
type candidate struct {
	nodeview.Claim
	ip netip.Addr
}

// adoptable returns the claims adoption may take, running sandboxes
// first, then by sandbox ID, then by address: one per address, of a
// sandbox that has no assignment under the evidence's key and whose DEL
// did not come after the listing started (the sandbox is going, and its
// address is free once the listing that no longer shows it proves the
// pool).
func (s *Store) adoptable(ev Evidence, view nodeview.View) []candidate {
	var cs []candidate
	for _, row := range view.Addresses {
		if len(row.Recorded) > 0 {
			continue
		}
		for _, c := range row.Claims {
			if c.SandboxID != "" {
				cs = append(cs, candidate{Claim: c, ip: row.IP})
			}
		}
	}
	slices.SortStableFunc(cs, func(a, b candidate) int {
		if a.Ready != b.Ready {
			if a.Ready {
				return -1
			}
			return 1
		}
		return cmp.Compare(a.SandboxID, b.SandboxID)
	})
	chosen := map[netip.Addr]bool{}
	return slices.DeleteFunc(cs, func(c candidate) bool {
		key := Key{Network: ev.Network, SandboxID: c.SandboxID, IfName: ev.IfName}
		if _, assigned := view.Assigned(key.Network, key.SandboxID, key.IfName); assigned || chosen[c.ip] {
			return true
		}
		if at, ok := s.delsWhileUnproven[key]; ok && !at.Before(ev.At) {
			return true
		}
		chosen[c.ip] = true
		return false
	})
}

// holdAdoptedLocked records an adopted assignment, IPv4 first as Assign
// orders them, and logs it.
func (s *Store) holdAdoptedLocked(ad *adoption, at time.Time) {
	a := ad.a
	all := a.All()
	slices.SortStableFunc(all, func(x, y ipsource.Address) int { return cmp.Compare(ipsource.Family(x.IP), ipsource.Family(y.IP)) })
	a.Address, a.Extra = all[0], nil
	if len(all) > 1 {
		a.Extra = all[1:]
	}
	s.holdLocked(a)
	s.adoptedEvents = append(s.adoptedEvents, Event{At: at, Kind: EventAdopted, Reason: ad.source, Assignment: *a})
	s.log.Warn("adopted an address from the runtime listing", slog.Any("key", a.Key),
		slog.String("pod", a.Pod.Namespace+"/"+a.Pod.Name), slog.String("ip", a.Address.IP.String()),
		slog.Any("extra_ips", a.IPs()[1:]), slog.String("source", ad.source))
}

func (s *Store) addressFor(ip netip.Addr) ipsource.Address {
	if e, ok := s.addrs[ip]; ok {
		return e.addr
	}
	if p := s.rangeForLocked(ip); p != nil {
		return p.address(ip)
	}
	return ipsource.Address{IP: ip}
}
