package datastore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"

	"github.com/sandboxipam/sandboxipam/ipamd/checkpoint"
	"github.com/sandboxipam/sandboxipam/ipamd/ipsource"
)

// snapshotLocked copies the state into the checkpoint form. Encoding and
// writing happen outside the lock.
func (s *Store) snapshotLocked() checkpoint.File {
	now := s.now()
	s.pruneLocked(now)
	f := checkpoint.File{
		SavedAt:     now,
		Unproven:    s.unproven,
		Cursor:      s.cursor,
		Addresses:   make([]checkpoint.Address, 0, len(s.assignments)+len(s.marked)),
		Assignments: make([]checkpoint.Assignment, 0, len(s.assignments)),
	}
	for _, a := range s.assignments {
		f.Addresses = append(f.Addresses, addressRecord(a.Address))
	}
	for ip := range s.marked {
		e := s.addrs[ip]
		cooling := e.cooling(now, s.cooldown)
		// While unproven every address is quarantined on arrival anyway;
		// only a quarantine that outlives it needs recording.
		quarantined := e.quarantined && !s.unproven
		if e.held || (!cooling && !quarantined) {
			continue
		}
		c := addressRecord(e.addr)
		c.Quarantined = quarantined
		if cooling {
			c.ReleasedAt = e.releasedAt
		}
		f.Addresses = append(f.Addresses, c)
	}
	for _, a := range s.assignments {
		f.Assignments = append(f.Assignments, checkpoint.Assignment{
			Network: a.Network, SandboxID: a.SandboxID, IfName: a.IfName,
			PodName: a.Pod.Name, Namespace: a.Pod.Namespace, UID: a.Pod.UID,
			IP: a.Address.IP, AssignedAt: a.AssignedAt,
		})
	}
	return f
}

func addressRecord(a ipsource.Address) checkpoint.Address {
	return checkpoint.Address{IP: a.IP, Subnet: a.Subnet, Gateway: a.Gateway, Group: a.Group}
}

// load fills a new store from its checkpoint, or decides it starts empty
// or unproven.
func (s *Store) load(ctx context.Context) error {
	s.removeStaleTemps()
	f, err := checkpoint.Read(s.path)
	switch {
	case err == nil:
		s.restore(f)
		s.recovery = Recovery{Checkpoint: RecoveryLoaded, Assignments: len(s.assignments)}
		if s.unproven {
			s.recovery.Detail = "the checkpoint was lost before and the runtime listing has not proven the pool yet; Assign is refused until Adopt"
			s.log.Warn("datastore loaded in unproven mode", slog.String("path", s.path))
		}
		s.log.Info("datastore checkpoint loaded", slog.String("path", s.path),
			slog.Int("assignments", len(s.assignments)), slog.Int("addresses", len(s.addrs)))
		return nil
	case errors.Is(err, checkpoint.ErrMissing) && s.proveWhenMissing:
		s.unproven = true
		s.recovery = Recovery{Checkpoint: RecoveryMissing,
			Detail: "no checkpoint, and the store is configured to prove its pool from the runtime listing before handing out addresses"}
		s.log.Warn("no datastore checkpoint: starting unproven until the runtime listing is adopted", slog.String("path", s.path))
		return s.persistNow(ctx)
	case errors.Is(err, checkpoint.ErrMissing):
		s.recovery = Recovery{Checkpoint: RecoveryMissing}
		s.log.Info("no datastore checkpoint: first start, empty store", slog.String("path", s.path))
		return nil
	default:
		return s.startUnproven(ctx, err)
	}
}

// startUnproven handles a checkpoint that exists but cannot be trusted:
// keep it aside for a human, refuse to hand out addresses, and persist
// that refusal at once so a crash now does not restart as "missing".
func (s *Store) startUnproven(ctx context.Context, cause error) error {
	aside := s.path + ".corrupt-" + strconv.FormatInt(s.now().Unix(), 10)
	if err := os.Rename(s.path, aside); err != nil {
		return fmt.Errorf("open datastore: %w: %v, and it could not be kept aside: %w", ErrCheckpointCorrupt, cause, err)
	}
	s.unproven = true
	s.recovery = Recovery{
		Checkpoint: RecoveryCorrupt,
		Detail:     fmt.Sprintf("%v; kept as %s; no address is handed out until the runtime listing is adopted", cause, aside),
	}
	s.log.Error("DATASTORE CHECKPOINT CORRUPT OR UNREADABLE: starting unproven, every address quarantined until the runtime listing is adopted",
		slog.String("path", s.path), slog.String("kept_as", aside), slog.Any("error", cause))
	return s.persistNow(ctx)
}

// persistNow writes the unproven state before Open returns, so a crash
// right after does not restart as a trusted first start.
func (s *Store) persistNow(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("open datastore: %w", err)
	}
	if err := s.writeFile(s.snapshotLocked()); err != nil {
		return fmt.Errorf("open datastore: persist unproven state: %w", err)
	}
	return nil
}

// restore rebuilds the in-memory state from a verified checkpoint. Its
// addresses are not in the pool until a source adds them again.
func (s *Store) restore(f checkpoint.File) {
	s.unproven = f.Unproven
	s.cursor = f.Cursor
	for _, c := range f.Addresses {
		s.addrs[c.IP] = &entry{
			addr:        ipsource.Address{IP: c.IP, Subnet: c.Subnet, Gateway: c.Gateway, Group: c.Group},
			quarantined: c.Quarantined, releasedAt: c.ReleasedAt,
		}
		if c.Quarantined || !c.ReleasedAt.IsZero() {
			s.marked[c.IP] = struct{}{}
		}
	}
	for _, c := range f.Assignments {
		a := &Assignment{
			Key:        Key{Network: c.Network, SandboxID: c.SandboxID, IfName: c.IfName},
			Pod:        Pod{Name: c.PodName, Namespace: c.Namespace, UID: c.UID},
			Address:    s.addrs[c.IP].addr,
			AssignedAt: c.AssignedAt,
		}
		s.holdLocked(a)
	}
}

// removeStaleTemps deletes temporary files a crash left mid-write; they
// were never renamed into place, so they hold nothing acknowledged.
func (s *Store) removeStaleTemps() {
	matches, _ := filepath.Glob(s.path + ".tmp-*")
	for _, m := range matches {
		if err := os.Remove(m); err == nil {
			s.log.Info("removed an unfinished checkpoint write", slog.String("path", m))
		}
	}
}
