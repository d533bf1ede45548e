package datastore

import (
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"slices"

	"github.com/sandboxipam/sandboxipam/ipamd/datastore/persist"
	"github.com/sandboxipam/sandboxipam/ipamd/datastore/proof"
	"github.com/sandboxipam/sandboxipam/ipamd/datastore/state"
	"github.com/sandboxipam/sandboxipam/ipamd/ipsource"
)

// validateKey refuses a key that lacks its network, sandbox ID or
// interface name.
func validateKey(k Key) error {
	if k.Network == "" || k.SandboxID == "" || k.IfName == "" {
		return fmt.Errorf("%w: network %q, sandbox ID %q, interface %q: none may be empty",
			ErrInvalidKey, k.Network, k.SandboxID, k.IfName)
	}
	return nil
}

// Assign hands key an address, or returns the one it already has (a
// repeated CNI ADD). The assignment is on disk before Assign returns.
func (s *Store) Assign(ctx context.Context, key Key, pod Pod) (Assignment, error) {
	return s.AssignWired(ctx, key, pod, WiringUnknown)
}

// AssignWired is Assign that records how the CNI plugin ran for the ADD
// with a new assignment (a repeated ADD keeps the first one's).
func (s *Store) AssignWired(ctx context.Context, key Key, pod Pod, wiring Wiring) (Assignment, error) {
	return s.AssignFrom(ctx, key, pod, Origin{Wiring: wiring})
}

// AssignFrom is Assign that records what the ADD said of the pod (how the
// plugin ran, its network namespace) with a new assignment (a repeated
// ADD keeps the first one's).
func (s *Store) AssignFrom(ctx context.Context, key Key, pod Pod, origin Origin) (Assignment, error) {
	if err := validateKey(key); err != nil {
		return Assignment{}, fmt.Errorf("assign: %w", err)
	}
	s.mu.Lock()
	_, existed := s.st.Lookup(key)
	a, b, err := s.assignLocked(key, pod, origin)
	s.mu.Unlock()
	if err != nil {
		return Assignment{}, err
	}
	err = b.Wait(ctx)
	if !existed {
		s.emit([]Event{{At: a.AssignedAt, Kind: EventAssigned, Assignment: a}})
	}
	if err != nil {
		return Assignment{}, fmt.Errorf("assign %s to sandbox %s: %w", a.Address.IP, key.SandboxID, err)
	}
	return a, nil
}

func (s *Store) assignLocked(key Key, pod Pod, origin Origin) (Assignment, *persist.Batch, error) {
	if s.closed {
		return Assignment{}, nil, fmt.Errorf("assign: %w", ErrClosed)
	}
	// An ADD after the DEL wires the sandbox again: its reports hold.
	s.apply(state.ForgetDeleted(key))
	if a, ok := s.st.Lookup(key); ok {
		if a.Pod != pod {
			s.log.Warn("repeated ADD for a key with other pod metadata; keeping the first",
				slog.Any("key", key), slog.Any("pod", a.Pod), slog.Any("new_pod", pod))
		}
		return a, s.commit.SyncLocked(), nil
	}
	if s.st.Unproven() {
		return Assignment{}, nil, fmt.Errorf("assign to sandbox %s: %w; waiting for: %s", key.SandboxID, ErrUnproven, proof.Refusal(s.waitingLocked()))
	}
	if s.fenced != "" {
		return Assignment{}, nil, fmt.Errorf("assign to sandbox %s: %w: %s", key.SandboxID, ErrFenced, s.fenced)
	}
	if s.poolWaiting != "" && len(s.familiesLocked()) == 0 {
		return Assignment{}, nil, fmt.Errorf("assign to sandbox %s: %w: waiting for %s", key.SandboxID, ErrPoolNotReady, s.poolWaiting)
	}
	now := s.now()
	// One address of each family: nothing is held unless every family
	// has one free.
	var picked []ipsource.Address
	for _, family := range s.familiesLocked() {
		addr, ok := s.pickLocked(family, now)
		if !ok && s.growthWaiting != "" {
			return Assignment{}, nil, fmt.Errorf("assign to sandbox %s: %w: no free %s address; waiting for %s",
				key.SandboxID, ErrPoolNotReady, family, s.growthWaiting)
		}
		if !ok {
			st := s.statsLocked()
			return Assignment{}, nil, fmt.Errorf("assign to sandbox %s: %w: no free %s address: %d addresses, %d assigned, %d cooling, %d quarantined",
				key.SandboxID, ErrPoolExhausted, family, st.Total, st.Assigned, st.Cooling, st.Quarantined)
		}
		picked = append(picked, addr)
	}
	if len(picked) == 0 {
		return Assignment{}, nil, fmt.Errorf("assign to sandbox %s: %w: the pool is empty", key.SandboxID, ErrPoolExhausted)
	}
	a := &Assignment{Key: key, Pod: pod, Address: picked[0], Extra: picked[1:], AssignedAt: now, Wiring: origin.Wiring, NetNS: origin.NetNS}
	if len(a.Extra) == 0 {
		a.Extra = nil
	}
	s.apply(state.Hold(a))
	for _, addr := range picked {
		s.apply(state.Cursor(addr.IP))
	}
	s.log.Info("address assigned", slog.Any("key", key), slog.Any("pod", pod), slog.String("ip", a.Address.IP.String()), slog.Any("extra_ips", a.IPs()[1:]))
	return *a, s.changedLocked(), nil
}

// Release frees key's address (a CNI DEL). An unknown key is not an error:
// CNI requires DEL to be idempotent. The release is on disk before Release
// returns.
func (s *Store) Release(ctx context.Context, key Key) (Assignment, bool, error) {
	return s.ReleaseFor(ctx, key, ReasonCNIDel)
}

// ReleaseFor is Release with the reason the log, the history and the
// metrics give (ReasonOperator for an operator's release).
func (s *Store) ReleaseFor(ctx context.Context, key Key, reason string) (Assignment, bool, error) {
	return s.releaseOne(ctx, key, reason, nil)
}

// releaseOne releases key and quarantines the addresses of it in hold
// (see ReleaseQuarantined), in one write.
func (s *Store) releaseOne(ctx context.Context, key Key, reason string, hold []netip.Addr) (Assignment, bool, error) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return Assignment{}, false, fmt.Errorf("release: %w", ErrClosed)
	}
	now := s.now()
	a, found := s.releaseLocked(key, now)
	if found {
		s.quarantineReleasedLocked(a, hold)
	}
	if reason == ReasonCNIDel {
		s.noteDeletedLocked(key, now)
	}
	if s.st.Unproven() {
		// A listing that started before this DEL may still show the
		// sandbox: it must not adopt it back (see adoptLocked).
		s.proof.NoteDel(key, now)
	}
	var b *persist.Batch
	switch {
	case found:
		b = s.changedLocked()
		s.logRelease(reason, a)
	case !s.touched.Empty():
		// The DEL of a key this store does not hold is noted all the
		// same (a stale report of its sandbox is stale too), durably.
		b = s.changedLocked()
		s.log.Info("release of an unknown key: nothing to release", slog.Any("key", key))
	default:
		b = s.commit.SyncLocked()
		s.log.Info("release of an unknown key: nothing to do", slog.Any("key", key))
	}
	s.mu.Unlock()
	err := b.Wait(ctx)
	if found {
		s.emit([]Event{{At: now, Kind: EventReleased, Reason: reason, Assignment: a}})
	}
	if err != nil {
		return Assignment{}, false, fmt.Errorf("release sandbox %s: %w", key.SandboxID, err)
	}
	return a, found, nil
}

// GC frees every assignment of network whose key is not in valid (the CNI
// GC verb's valid attachments), in one write.
func (s *Store) GC(ctx context.Context, network string, valid []Key) ([]Assignment, error) {
	keep := make(map[Key]struct{}, len(valid))
	for _, k := range valid {
		keep[k] = struct{}{}
	}
	return s.releaseWhere(ctx, "gc network "+network, ReasonCNIGC, func(a Assignment) bool {
		_, ok := keep[a.Key]
		return a.Network == network && !ok
	})
}

// ReleaseAssignments frees each given assignment that is still exactly as
// given (same key, address and AssignedAt), in one write. An assignment
// that was released or made anew since the caller read it is left alone,
// so a reconciler working from a snapshot never frees a fresh assignment.
// The caller is the reconciler: each release's reason is
// ReasonRuntimeGone.
func (s *Store) ReleaseAssignments(ctx context.Context, stale []Assignment) ([]Assignment, error) {
	want := make(map[Key]Assignment, len(stale))
	for _, a := range stale {
		want[a.Key] = a
	}
	return s.releaseWhere(ctx, "release stale assignments", ReasonRuntimeGone, func(a Assignment) bool {
		w, ok := want[a.Key]
		return ok && slices.Equal(w.IPs(), a.IPs()) && w.AssignedAt.Equal(a.AssignedAt)
	})
}

// releaseWhere frees every assignment match selects, with one write.
func (s *Store) releaseWhere(ctx context.Context, op, reason string, match func(Assignment) bool) ([]Assignment, error) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, fmt.Errorf("%s: %w", op, ErrClosed)
	}
	var keys []Key
	for a := range s.st.Assignments() {
		if match(a) {
			keys = append(keys, a.Key)
		}
	}
	slices.SortFunc(keys, state.CompareKeys)
	now := s.now()
	released := make([]Assignment, 0, len(keys))
	events := make([]Event, 0, len(keys))
	for _, k := range keys {
		a, _ := s.releaseLocked(k, now)
		released = append(released, a)
		events = append(events, Event{At: now, Kind: EventReleased, Reason: reason, Assignment: a})
		s.logRelease(reason, a)
	}
	var b *persist.Batch
	if len(released) > 0 {
		b = s.changedLocked()
	} else {
		b = s.commit.SyncLocked()
	}
	s.mu.Unlock()
	err := b.Wait(ctx)
	s.emit(events)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	return released, nil
}
