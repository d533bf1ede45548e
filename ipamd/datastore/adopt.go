package datastore

import (
	"context"
	"fmt"
	"log/slog"
	"net/netip"

	"github.com/sandboxipam/sandboxipam/ipamd/ipsource"
	"github.com/sandboxipam/sandboxipam/runtime"
)

// AdoptReport says what Adopt did.
type AdoptReport struct {
	// Adopted counts new assignments made from sandboxes' IPs.
	Adopted int
	// Known counts listed sandboxes that already had an assignment.
	Known int
	// Conflicts counts sandboxes whose IP another key already holds;
	// they are logged at ERROR and left alone.
	Conflicts int
	// ProvenFree counts quarantined addresses proven free.
	ProvenFree int
	// Quarantined counts addresses still quarantined afterwards.
	Quarantined int
	// Proven is true when the store hands out addresses again.
	Proven bool
}

// Adopt rebuilds assignments from what the runtime reports after a lost
// checkpoint: sandboxes (with their IPs) from a successful adapter listing.
// Addresses held by a listed sandbox become assignments under (network,
// sandbox ID, ifName). When complete is true (every non-host-network
// sandbox reported its IPs) the remaining quarantined addresses are proven
// free and Assign works again; otherwise they stay quarantined until a
// later Adopt proves them.
//
// An IP outside the pool is adopted too: the pool may be filled after
// Adopt, and an address a live sandbox holds must never be handed out.
// Adopt on a trusted store (after a missing checkpoint) only adds
// assignments for sandboxes' IPs nobody holds.
func (s *Store) Adopt(ctx context.Context, network, ifName string, sandboxes []runtime.Sandbox, complete bool) (AdoptReport, error) {
	if network == "" || ifName == "" {
		return AdoptReport{}, fmt.Errorf("adopt: %w: network %q, interface %q", ErrInvalidKey, network, ifName)
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return AdoptReport{}, fmt.Errorf("adopt: %w", ErrClosed)
	}
	rep, stillHeld := s.adoptSandboxesLocked(network, ifName, sandboxes)
	s.settleQuarantineLocked(&rep, stillHeld, complete)
	s.order = nil
	// Adoption can change the quarantine of every address and whether the
	// store is proven: written as a whole snapshot, not a journal record.
	s.needFull = true
	b := s.changedLocked()
	s.mu.Unlock()
	if err := wait(ctx, b); err != nil {
		return rep, fmt.Errorf("adopt runtime listing: %w", err)
	}
	return rep, nil
}

// adoptSandboxesLocked makes an assignment per listed sandbox IP and
// returns the IPs listed sandboxes hold beyond their one assignment (a
// second address family): those stay quarantined.
func (s *Store) adoptSandboxesLocked(network, ifName string, sandboxes []runtime.Sandbox) (AdoptReport, map[netip.Addr]bool) {
	var rep AdoptReport
	extra := map[netip.Addr]bool{}
	now := s.now()
	for _, sb := range sandboxes {
		if sb.HostNetwork || len(sb.IPs) == 0 {
			continue
		}
		key := Key{Network: network, SandboxID: sb.ID, IfName: ifName}
		chosen := s.chooseAdoptIP(sb.IPs)
		for _, ip := range sb.IPs {
			if ip != chosen {
				extra[ip] = true
			}
		}
		if a, ok := s.assignments[key]; ok {
			rep.Known++
			if a.Address.IP != chosen {
				extra[chosen] = true
			}
			continue
		}
		if e, ok := s.addrs[chosen]; ok && e.held {
			rep.Conflicts++
			s.log.Error("adopt: a listed sandbox reports an IP another key holds; leaving both alone",
				slog.String("ip", chosen.String()), slog.String("sandbox_id", sb.ID), slog.Any("holder", e.holder))
			continue
		}
		s.holdLocked(&Assignment{
			Key:        key,
			Pod:        Pod{Name: sb.Name, Namespace: sb.Namespace, UID: sb.UID},
			Address:    s.addressFor(chosen),
			AssignedAt: now,
		})
		rep.Adopted++
		s.log.Warn("adopted an address from the runtime listing", slog.Any("key", key),
			slog.String("pod", sb.Namespace+"/"+sb.Name), slog.String("ip", chosen.String()))
	}
	return rep, extra
}

// chooseAdoptIP prefers an IP the pool has: the store records one address
// per key.
func (s *Store) chooseAdoptIP(ips []netip.Addr) netip.Addr {
	for _, ip := range ips {
		if e, ok := s.addrs[ip]; ok && e.inPool {
			return ip
		}
	}
	return ips[0]
}

func (s *Store) addressFor(ip netip.Addr) ipsource.Address {
	if e, ok := s.addrs[ip]; ok {
		return e.addr
	}
	return ipsource.Address{IP: ip}
}

// settleQuarantineLocked proves quarantined addresses free after a complete
// listing, and counts what stays quarantined.
func (s *Store) settleQuarantineLocked(rep *AdoptReport, stillHeld map[netip.Addr]bool, complete bool) {
	for ip, e := range s.addrs {
		switch {
		case stillHeld[ip] && !e.held:
			// A listed sandbox holds it without an assignment (its
			// second address family): never hand it out while the
			// pool is unproven; on a trusted store it is only logged.
			if s.unproven || e.quarantined {
				e.quarantined = true
				s.marked[ip] = struct{}{}
			} else {
				s.log.Warn("a listed sandbox holds an address outside its assignment", slog.String("ip", ip.String()))
			}
		case complete && e.quarantined:
			e.quarantined = false
			rep.ProvenFree++
		}
		if e.quarantined && e.inPool {
			rep.Quarantined++
		}
	}
	wasUnproven := s.unproven
	if complete {
		s.unproven = false
	}
	rep.Proven = !s.unproven
	switch {
	case wasUnproven && complete:
		s.log.Warn("datastore proven from a complete runtime listing: handing out addresses again",
			slog.Int("adopted", rep.Adopted), slog.Int("proven_free", rep.ProvenFree), slog.Int("still_quarantined", rep.Quarantined))
	case s.unproven:
		s.log.Warn("runtime listing was incomplete: addresses stay quarantined until a complete listing proves them free",
			slog.Int("adopted", rep.Adopted), slog.Int("quarantined", rep.Quarantined))
	}
}
