package datastore

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"math"
	"net/netip"
	"slices"
	"time"

	"github.com/sandboxipam/sandboxipam/ipamd/ipsource"
	"github.com/sandboxipam/sandboxipam/ipamd/nodeview"
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
	wasUnproven := s.unproven
	rep, b := s.observeLocked(ev)
	events := s.adoptedEvents
	s.adoptedEvents = nil
	s.mu.Unlock()
	s.logObserve(wasUnproven, rep)
	err := wait(ctx, b)
	s.emit(events)
	if err != nil {
		return rep, fmt.Errorf("record the runtime listing: %w", err)
	}
	return rep, nil
}

// observeLocked applies the evidence and returns the batch that records
// it. Adoption and quarantine judge by one nodeview.Join of the evidence
// with the store's assignments (viewLocked), taken again after adopting.
func (s *Store) observeLocked(ev Evidence) (ObserveReport, *batch) {
	wasUnproven := s.unproven
	var rep ObserveReport
	rep.Confirmed = s.confirmLocked(ev.Listed, ev.At)
	s.forgetDeletedLocked(ev.Listed)
	view := s.viewLocked(ev)
	if s.unproven {
		if rep.Adopted = s.adoptLocked(ev, view); rep.Adopted > 0 {
			view = s.viewLocked(ev)
		}
	}
	foreign := s.foreignLocked(view)
	quarantinedBefore := s.quarantinedLocked()
	if s.unproven && len(ev.Unaccounted) == 0 {
		s.unproven = false
		clear(s.delsWhileUnproven)
	}
	s.unaccounted = nil
	if s.unproven {
		s.unaccounted = slices.Clone(ev.Unaccounted)
		rep.Unaccounted = s.unaccounted
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
	rep.Proven = !s.unproven
	if rep.Adopted+rep.Confirmed+rep.Conflicts+rep.ProvenFree == 0 && wasUnproven == s.unproven {
		return rep, s.syncLocked()
	}
	if wasUnproven {
		// Leaving the unproven state changes the quarantine of every
		// address: written as a whole snapshot, not a journal record.
		s.needFull = true
	}
	return rep, s.changedLocked()
}

// confirmLocked marks the assignments of listed sandboxes as seen.
func (s *Store) confirmLocked(listed map[string]struct{}, at time.Time) int {
	n := 0
	for k, a := range s.assignments {
		if _, ok := listed[k.SandboxID]; ok && a.ListedAt.IsZero() {
			a.ListedAt = at
			s.dirtyKeys[k] = struct{}{}
			n++
		}
	}
	return n
}

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

// foreignLocked returns the pool addresses whose view row has a claim by
// another than the one assignment recording it (any claim, when none
// does), with that claim.
func (s *Store) foreignLocked(view nodeview.View) map[netip.Addr]Holding {
	foreign := map[netip.Addr]Holding{}
	for _, row := range view.Addresses {
		if !s.inPoolLocked(row.IP) {
			continue
		}
		if c, ok := row.Foreign(); ok {
			foreign[row.IP] = Holding{IP: row.IP, SandboxID: c.SandboxID, Ready: c.Ready, Source: c.Source}
		}
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

// ProofState says whether the store hands out addresses and, when not,
// what it waits for.
type ProofState struct {
	// Unproven: no trusted checkpoint, and no listing has proven the pool.
	Unproven bool
	// Quarantined counts pool addresses never handed out right now.
	Quarantined int
	// Waiting names what keeps the store unproven: the pods whose
	// addresses nothing accounted for, or that no listing came yet.
	Waiting []string
}

// Proof reports the store's proof state.
func (s *Store) Proof() ProofState {
	s.mu.Lock()
	defer s.mu.Unlock()
	return ProofState{Unproven: s.unproven, Quarantined: s.statsLocked().Unproven, Waiting: s.waitingLocked()}
}

// waitingLocked names what an unproven store waits for.
func (s *Store) waitingLocked() []string {
	if !s.unproven {
		return nil
	}
	if len(s.unaccounted) == 0 {
		return []string{"a successful runtime listing (the adapter has not listed this node's sandboxes yet)"}
	}
	return slices.Clone(s.unaccounted)
}

// NoteWaiting records why an unproven store cannot be proven yet when no
// listing will come (no adapter, or auto refused to pick one), so the
// refusal of every ADD says what the operator must fix.
func (s *Store) NoteWaiting(why string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.unproven {
		s.unaccounted = []string{why}
	}
}

// ReleasedWhileUnproven reports whether a DEL, or an operator's release,
// for key came while the store was unproven: the sandbox gave back
// whatever it held, so a listing that still shows it, reporting no
// address, is no reason to stay unproven.
func (s *Store) ReleasedWhileUnproven(key Key) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.delsWhileUnproven[key]
	return s.unproven && ok
}
