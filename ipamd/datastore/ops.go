package datastore

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
)

func (k Key) validate() error {
	if k.Network == "" || k.SandboxID == "" || k.IfName == "" {
		return fmt.Errorf("%w: network %q, sandbox ID %q, interface %q: none may be empty",
			ErrInvalidKey, k.Network, k.SandboxID, k.IfName)
	}
	return nil
}

// LogValue makes a key log as one group.
func (k Key) LogValue() slog.Value {
	return slog.GroupValue(slog.String("network", k.Network), slog.String("sandbox_id", k.SandboxID), slog.String("ifname", k.IfName))
}

// LogValue makes a pod log as one group.
func (p Pod) LogValue() slog.Value {
	return slog.GroupValue(slog.String("name", p.Name), slog.String("namespace", p.Namespace), slog.String("uid", p.UID))
}

// Assign hands key an address, or returns the one it already has (a
// repeated CNI ADD). The assignment is on disk before Assign returns.
func (s *Store) Assign(ctx context.Context, key Key, pod Pod) (Assignment, error) {
	if err := key.validate(); err != nil {
		return Assignment{}, fmt.Errorf("assign: %w", err)
	}
	s.mu.Lock()
	a, b, err := s.assignLocked(key, pod)
	s.mu.Unlock()
	if err != nil {
		return Assignment{}, err
	}
	if err := wait(ctx, b); err != nil {
		return Assignment{}, fmt.Errorf("assign %s to sandbox %s: %w", a.Address.IP, key.SandboxID, err)
	}
	return a, nil
}

func (s *Store) assignLocked(key Key, pod Pod) (Assignment, *batch, error) {
	if s.closed {
		return Assignment{}, nil, fmt.Errorf("assign: %w", ErrClosed)
	}
	if a, ok := s.assignments[key]; ok {
		if a.Pod != pod {
			s.log.Warn("repeated ADD for a key with other pod metadata; keeping the first",
				slog.Any("key", key), slog.Any("pod", a.Pod), slog.Any("new_pod", pod))
		}
		return *a, s.syncLocked(), nil
	}
	if s.unproven {
		return Assignment{}, nil, fmt.Errorf("assign to sandbox %s: %w; waiting for: %s", key.SandboxID, ErrUnproven, strings.Join(s.waitingLocked(), "; "))
	}
	now := s.now()
	e, ok := s.pickLocked(now)
	if !ok {
		st := s.statsLocked()
		return Assignment{}, nil, fmt.Errorf("assign to sandbox %s: %w: %d addresses, %d assigned, %d cooling, %d quarantined",
			key.SandboxID, ErrPoolExhausted, st.Total, st.Assigned, st.Cooling, st.Unproven)
	}
	a := &Assignment{Key: key, Pod: pod, Address: e.addr, AssignedAt: now}
	s.holdLocked(a)
	s.cursor = e.addr.IP
	s.log.Info("address assigned", slog.Any("key", key), slog.Any("pod", pod), slog.String("ip", e.addr.IP.String()))
	return *a, s.changedLocked(), nil
}

// Release frees key's address (a CNI DEL). An unknown key is not an error:
// CNI requires DEL to be idempotent. The release is on disk before Release
// returns.
func (s *Store) Release(ctx context.Context, key Key) (Assignment, bool, error) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return Assignment{}, false, fmt.Errorf("release: %w", ErrClosed)
	}
	a, found := s.releaseLocked(key, s.now())
	var b *batch
	if found {
		b = s.changedLocked()
		s.log.Info("address released", slog.Any("key", key), slog.Any("pod", a.Pod), slog.String("ip", a.Address.IP.String()))
	} else {
		b = s.syncLocked()
		s.log.Info("release of an unknown key: nothing to do", slog.Any("key", key))
	}
	s.mu.Unlock()
	if err := wait(ctx, b); err != nil {
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
	return s.releaseWhere(ctx, "gc network "+network, slog.LevelInfo, func(a *Assignment) bool {
		_, ok := keep[a.Key]
		return a.Network == network && !ok
	})
}

// ReleaseAssignments frees each given assignment that is still exactly as
// given (same key, address and AssignedAt), in one write. An assignment
// that was released or made anew since the caller read it is left alone,
// so a reconciler working from a snapshot never frees a fresh assignment.
// Each release is logged at debug level only: the caller logs why.
func (s *Store) ReleaseAssignments(ctx context.Context, stale []Assignment) ([]Assignment, error) {
	want := make(map[Key]Assignment, len(stale))
	for _, a := range stale {
		want[a.Key] = a
	}
	return s.releaseWhere(ctx, "release stale assignments", slog.LevelDebug, func(a *Assignment) bool {
		w, ok := want[a.Key]
		return ok && w.Address.IP == a.Address.IP && w.AssignedAt.Equal(a.AssignedAt)
	})
}

// releaseWhere frees every assignment match selects, with one write.
func (s *Store) releaseWhere(ctx context.Context, op string, level slog.Level, match func(*Assignment) bool) ([]Assignment, error) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, fmt.Errorf("%s: %w", op, ErrClosed)
	}
	var keys []Key
	for k, a := range s.assignments {
		if match(a) {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, compareKeys)
	now := s.now()
	released := make([]Assignment, 0, len(keys))
	for _, k := range keys {
		a, _ := s.releaseLocked(k, now)
		released = append(released, a)
		s.log.Log(ctx, level, "address released", slog.String("op", op), slog.Any("key", k), slog.Any("pod", a.Pod), slog.String("ip", a.Address.IP.String()))
	}
	var b *batch
	if len(released) > 0 {
		b = s.changedLocked()
	} else {
		b = s.syncLocked()
	}
	s.mu.Unlock()
	if err := wait(ctx, b); err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	return released, nil
}
