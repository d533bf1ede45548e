package datastore

// Observe: a runtime listing's evidence applied to the store in one
// write. It joins the evidence with the assignments by one join.Join
// (viewLocked, join.go); package proof decides from those rows what to
// adopt and what to quarantine; the store applies it: adopt.go,
// quarantine.go, and proof.go for the unproven state.

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"net/netip"
	"slices"
	"time"

	"github.com/sandboxipam/sandboxipam/ipamd/datastore/persist"
	"github.com/sandboxipam/sandboxipam/ipamd/datastore/state"
)

// Holding is one piece of evidence that a pod holds an address: the
// runtime reports it for a sandbox, or the node routes it to a pod's veth.
type Holding struct {
	IP netip.Addr
	// SandboxID is the sandbox holding IP; empty when only the node shows
	// it (a host route to a veth that no listed sandbox and no assignment
	// owns).
	SandboxID string
	// Pod is the sandbox's identity, for an adopted assignment.
	Pod Pod
	// Ready: the sandbox runs. When two sandboxes claim one address (a
	// stopped sandbox may still report an address it gave back), the
	// running one is adopted as its holder.
	Ready bool
	// Source says where the evidence came from, for the log.
	Source string
}

// Evidence is what one successful runtime listing, and the node, say about
// which addresses pods hold.
type Evidence struct {
	// Network and IfName key the assignments adopted from Holdings.
	Network, IfName string
	// At is when the listing started.
	At time.Time
	// Listed holds the IDs of every pod-network sandbox in the listing:
	// their assignments are marked as seen by the runtime (ListedAt).
	Listed map[string]struct{}
	// Holdings are the addresses listed sandboxes and the node hold.
	Holdings []Holding
	// Unaccounted says, one line each, which pod-network sandboxes (or
	// pod links on the node) hold addresses that nothing could show.
	// While any is left, a store without a trusted checkpoint stays
	// unproven.
	Unaccounted []string
}

// ObserveReport says what Observe did.
type ObserveReport struct {
	// Adopted counts assignments rebuilt from holdings (unproven store).
	Adopted int
	// Confirmed counts assignments whose sandbox a listing showed for the
	// first time.
	Confirmed int
	// Conflicts counts addresses that a sandbox holds while the store has
	// them free, cooling or under another key: each is quarantined.
	Conflicts int
	// ProvenFree counts quarantined addresses released from quarantine.
	ProvenFree int
	// Quarantined counts pool addresses still quarantined afterwards.
	Quarantined int
	// Proven is true when the store hands out addresses.
	Proven bool
	// Unaccounted is the evidence's, when it kept the store unproven.
	Unaccounted []string
}

// Observe applies one successful listing's evidence, in one write:
//
//   - assignments whose sandbox is listed are marked as seen (ListedAt);
//   - an unproven store (no trusted checkpoint) adopts an assignment for
//     each held address whose sandbox has none, the running sandbox first;
//   - an address that a sandbox holds while the store has it free,
//     cooling or under another key is quarantined, logged and counted,
//     never handed out; a quarantine ends once no evidence shows such a
//     holder and the store is proven;
//   - an unproven store becomes proven when nothing is unaccounted for;
//   - a stopped sandbox's report of an address after this store answered
//     its DEL is stale (CRI-O keeps reporting it): neither adopted nor
//     quarantined (see noteDeletedLocked).
//
// An address outside the pool that a sandbox holds is adopted too (the
// pool may grow to include it later) but never quarantined: it is not
// handed out anyway.
func (s *Store) Observe(ctx context.Context, ev Evidence) (ObserveReport, error) {
	if ev.Network == "" || ev.IfName == "" {
		return ObserveReport{}, fmt.Errorf("observe: %w: network %q, interface %q", ErrInvalidKey, ev.Network, ev.IfName)
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return ObserveReport{}, fmt.Errorf("observe: %w", ErrClosed)
	}
	wasUnproven := s.st.Unproven()
	rep, b := s.observeLocked(ev)
	events := s.adoptedEvents
	s.adoptedEvents = nil
	s.mu.Unlock()
	s.logObserve(wasUnproven, rep)
	err := b.Wait(ctx)
	s.emit(events)
	if err != nil {
		return rep, fmt.Errorf("record the runtime listing: %w", err)
	}
	return rep, nil
}

// observeLocked applies the evidence and returns the batch that records
// it. Adoption and quarantine judge by one join.Join of the evidence
// with the store's assignments (viewLocked), taken again after adopting.
func (s *Store) observeLocked(ev Evidence) (ObserveReport, *persist.Batch) {
	wasUnproven := s.st.Unproven()
	var rep ObserveReport
	rep.Confirmed = s.confirmLocked(ev.Listed, ev.At)
	forgotten := s.forgetDeletedLocked(ev.Listed)
	view := s.viewLocked(ev)
	if wasUnproven {
		if rep.Adopted = s.adoptLocked(ev, view); rep.Adopted > 0 {
			view = s.viewLocked(ev)
		}
	}
	foreign := s.foreignLocked(view)
	quarantinedBefore := s.quarantinedLocked()
	if wasUnproven {
		if s.proof.Listed(ev.Unaccounted) {
			s.apply(state.SetUnproven(false))
		} else {
			rep.Unaccounted = slices.Clone(ev.Unaccounted)
		}
	}
	rep.Conflicts = s.settleQuarantineLocked(foreign, wasUnproven)
	rep.Quarantined = s.quarantinedLocked()
	// Every pool address is quarantined, or lifted, or neither: what left
	// the count beyond the new conflicts was proven free.
	if quarantinedBefore == math.MaxInt {
		rep.ProvenFree = math.MaxInt // saturated: an IPv6 /64 was proven free
	} else {
		rep.ProvenFree = max(0, quarantinedBefore+rep.Conflicts-rep.Quarantined)
	}
	rep.Proven = !s.st.Unproven()
	if forgotten+rep.Adopted+rep.Confirmed+rep.Conflicts+rep.ProvenFree == 0 && wasUnproven == s.st.Unproven() {
		return rep, s.commit.SyncLocked()
	}
	if wasUnproven {
		// Leaving the unproven state changes the quarantine of every
		// address, and adopting while unproven much of the state:
		// written as a whole snapshot, not a journal record.
		s.commit.NeedFullLocked()
	}
	return rep, s.changedLocked()
}

// confirmLocked marks the assignments of listed sandboxes as seen.
func (s *Store) confirmLocked(listed map[string]struct{}, at time.Time) int {
	var confirm []Key
	for a := range s.st.Assignments() {
		if _, ok := listed[a.SandboxID]; ok && a.ListedAt.IsZero() {
			confirm = append(confirm, a.Key)
		}
	}
	for _, k := range confirm {
		s.apply(state.Confirm(k, at))
	}
	return len(confirm)
}

func (s *Store) logObserve(wasUnproven bool, rep ObserveReport) {
	switch {
	case wasUnproven && rep.Proven:
		s.log.Warn("datastore PROVEN from the runtime listing and the node: handing out addresses again",
			slog.Int("adopted", rep.Adopted), slog.Int("proven_free", rep.ProvenFree), slog.Int("still_quarantined", rep.Quarantined))
	case !rep.Proven:
		s.log.Error("datastore still UNPROVEN: some pods' addresses are not accounted for, so no address is handed out",
			slog.Int("adopted", rep.Adopted), slog.Int("quarantined", rep.Quarantined), slog.Any("unaccounted", rep.Unaccounted))
	}
}
