package datastore

// Quarantine: an address a pod holds while the store records it free,
// cooling or under another key is never handed out while that lasts.

import (
	"log/slog"
	"net/netip"

	"github.com/sandboxipam/sandboxipam/ipamd/datastore/proof"
	"github.com/sandboxipam/sandboxipam/ipamd/ipsource"
	"github.com/sandboxipam/sandboxipam/ipamd/nodeview"
)

// foreignLocked returns the pool addresses proof.Foreign finds in the
// view: claimed by another than the one assignment recording them (by
// anyone, when none does), with that claim.
func (s *Store) foreignLocked(view nodeview.View) map[netip.Addr]Holding {
	foreign := map[netip.Addr]Holding{}
	for ip, c := range proof.Foreign(view, s.inPoolLocked) {
		foreign[ip] = Holding{IP: ip, SandboxID: c.SandboxID, Ready: c.Ready, Source: c.Source}
	}
	return foreign
}

// settleQuarantineLocked quarantines the foreign addresses and lifts the
// quarantine of the others once the store is proven. It returns how many
// addresses were newly quarantined: while the store was unproven, every
// pool address nobody held was quarantined already.
func (s *Store) settleQuarantineLocked(foreign map[netip.Addr]Holding, wasUnproven bool) (conflicts int) {
	for ip, h := range foreign {
		e := s.entryLocked(ip, ipsource.Address{IP: ip})
		if e.quarantined {
			continue
		}
		implicit := wasUnproven && !e.held
		e.quarantined = true
		s.marked[ip] = struct{}{}
		s.dirtyIPs[ip] = struct{}{}
		if implicit {
			continue
		}
		conflicts++
		holder := "nobody (free or cooling)"
		if e.held {
			holder = e.holder.SandboxID
		}
		s.log.Error("QUARANTINED: a pod holds an address the datastore does not record under it; it is never handed out while that lasts",
			slog.String("ip", ip.String()), slog.String("held_by_sandbox", h.SandboxID), slog.String("evidence", h.Source),
			slog.String("datastore_holder", holder))
	}
	if s.unproven {
		return conflicts
	}
	for ip := range s.marked {
		e, ok := s.addrs[ip]
		if _, isForeign := foreign[ip]; ok && !isForeign && e.quarantined {
			e.quarantined = false
			s.dirtyIPs[ip] = struct{}{}
		}
	}
	return conflicts
}

// quarantinedLocked counts the pool addresses never handed out now: the
// quarantined ones, held or not, and while the store is unproven every
// one nobody holds.
func (s *Store) quarantinedLocked() int {
	var n uint64
	if s.unproven {
		st := s.statsLocked()
		n = uint64(st.Unproven)
	}
	for ip, e := range s.addrs {
		if e.quarantined && (e.held || !s.unproven) && s.inPoolLocked(ip) {
			n++
		}
	}
	return clampInt(n)
}
