package datastore

// Adoption: an unproven store rebuilds the assignments of pods that hold
// addresses it has no record of. What to adopt is package proof's pure
// decision; recording it is here.

import (
	"log/slog"

	"github.com/sandboxipam/sandboxipam/ipamd/datastore/proof"
	"github.com/sandboxipam/sandboxipam/ipamd/datastore/state"
	"github.com/sandboxipam/sandboxipam/ipamd/join"
)

// adoptLocked makes the assignments proof.Adoptions picks from the view:
// for each sandbox holding addresses that no assignment records, one per
// family, running sandboxes first.
func (s *Store) adoptLocked(ev Evidence, view join.View) int {
	pods := make(map[string]Pod, len(ev.Holdings))
	for _, h := range ev.Holdings {
		if _, ok := pods[h.SandboxID]; !ok {
			pods[h.SandboxID] = h.Pod
		}
	}
	// A DEL that came after this listing started: the sandbox is going.
	going := s.proof.Going(ev.Network, ev.IfName, ev.At)
	adoptions := proof.Adoptions(view, ev.Network, ev.IfName, going)
	for _, ad := range adoptions {
		a := &Assignment{Key: Key{Network: ev.Network, SandboxID: ad.SandboxID, IfName: ev.IfName}, Pod: pods[ad.SandboxID],
			Address: s.addressFor(ad.IPs[0]), AssignedAt: ev.At, ListedAt: ev.At}
		for _, ip := range ad.IPs[1:] {
			a.Extra = append(a.Extra, s.addressFor(ip))
		}
		s.apply(state.Hold(a))
		s.adoptedEvents = append(s.adoptedEvents, Event{At: ev.At, Kind: EventAdopted, Reason: ad.Source, Assignment: *a})
		s.log.Warn("adopted an address from the runtime listing", slog.Any("key", a.Key),
			slog.String("pod", a.Pod.Namespace+"/"+a.Pod.Name), slog.String("ip", a.Address.IP.String()),
			slog.Any("extra_ips", a.IPs()[1:]), slog.String("source", ad.Source))
	}
	return len(adoptions)
}
