package datastore

// Quarantine: an address a pod holds while the store records it free,
// cooling or under another key is never handed out while that lasts.

import (
	"log/slog"
	"net/netip"

	"github.com/sandboxipam/sandboxipam/ipamd/datastore/proof"
	"github.com/sandboxipam/sandboxipam/ipamd/datastore/state"
	"github.com/sandboxipam/sandboxipam/ipamd/join"
)

// foreignLocked returns the pool addresses proof.Foreign finds in the
// view: claimed by another than the one assignment recording them (by
// anyone, when none does), with that claim.
func (s *Store) foreignLocked(view join.View) map[netip.Addr]Holding {
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
		e, _ := s.st.Entry(ip)
		if e.Quarantined {
			continue
		}
		implicit := wasUnproven && !e.Held
		s.apply(state.Quarantine(s.addressFor(ip)))
		if implicit {
			continue
		}
		conflicts++
		holder := "nobody (free or cooling)"
		if e.Held {
			holder = e.Holder.SandboxID
		}
		s.log.Error("QUARANTINED: a pod holds an address the datastore does not record under it; it is never handed out while that lasts",
			slog.String("ip", ip.String()), slog.String("held_by_sandbox", h.SandboxID), slog.String("evidence", h.Source),
			slog.String("datastore_holder", holder))
	}
	if s.st.Unproven() {
		return conflicts
	}
	for _, ip := range s.st.Quarantined() {
		if _, isForeign := foreign[ip]; !isForeign {
			s.apply(state.Clear(ip))
		}
	}
	return conflicts
}

// quarantinedLocked counts the pool addresses never handed out now: the
// quarantined ones, held or not, and while the store is unproven every
// one nobody holds.
func (s *Store) quarantinedLocked() int {
	var n uint64
	unproven := s.st.Unproven()
	if unproven {
		st := s.statsLocked()
		n = uint64(st.Quarantined)
	}
	for ip, e := range s.st.Addresses() {
		if e.Quarantined && (e.Held || !unproven) && s.inPoolLocked(ip) {
			n++
		}
	}
	return clampInt(n)
}
