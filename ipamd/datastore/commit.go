package datastore

import (
	"context"
	"fmt"
	"log/slog"
	"net/netip"

	"github.com/sandboxipam/sandboxipam/ipamd/checkpoint"
)

// commitState tracks which in-memory version of the state is on disk.
// version counts changes; durable is the newest version a successful write
// holds. pending collects callers whose change no write has picked up yet;
// inflight is the batch being written.
type commitState struct {
	version  uint64
	durable  uint64
	pending  *batch
	inflight *batch
}

// batch is one group commit: every caller that joined it waits on done
// and gets err.
type batch struct {
	version uint64
	done    chan struct{}
	err     error
}

// changedLocked records a change and returns the batch that will write it.
func (s *Store) changedLocked() *batch {
	s.sweepRetiringLocked()
	s.commit.version++
	return s.joinPendingLocked()
}

func (s *Store) joinPendingLocked() *batch {
	if s.commit.pending == nil {
		s.commit.pending = &batch{done: make(chan struct{})}
		select {
		case s.wake <- struct{}{}:
		default:
		}
	}
	return s.commit.pending
}

// syncLocked returns the batch a caller must wait on so that everything it
// saw in memory is on disk, or nil when it already is. It is how a
// repeated ADD or DEL after a failed write waits for that change to land.
func (s *Store) syncLocked() *batch {
	c := &s.commit
	switch {
	case c.version == c.durable:
		return nil
	case c.pending != nil:
		return c.pending
	case c.inflight != nil:
		// No change since the in-flight snapshot, or there would be a
		// pending batch: the in-flight write covers what we saw.
		return c.inflight
	default:
		// The last write failed; try again.
		return s.joinPendingLocked()
	}
}

// wait blocks until b is written. A cancelled ctx returns early; the change
// is then still written, and a retried call finds it.
func wait(ctx context.Context, b *batch) error {
	if b == nil {
		return nil
	}
	select {
	case <-b.done:
		return b.err
	case <-ctx.Done():
		return fmt.Errorf("waiting for the checkpoint write: %w", ctx.Err())
	}
}

// writer is the single goroutine that writes checkpoints, one batch at a
// time, so each write holds every change made before its snapshot.
func (s *Store) writer() {
	defer close(s.stopped)
	for {
		select {
		case <-s.wake:
			s.writeBatch()
		case <-s.stop:
			s.writeBatch()
			return
		}
	}
}

// compactBytes is the journal size past which the next commit compacts:
// replay at start stays in the tens of milliseconds, and a compaction (a
// whole snapshot) is paid once per thousands of commits. A variable so
// tests can make compaction happen.
const compactBytes int64 = 1 << 20

// writeBatch writes the pending batch, if any, and wakes its callers.
func (s *Store) writeBatch() {
	s.mu.Lock()
	b := s.commit.pending
	if b == nil {
		s.mu.Unlock()
		return
	}
	s.commit.pending = nil
	s.commit.inflight = b
	b.version = s.commit.version
	full := s.needFullLocked()
	var file checkpoint.File
	var rec checkpoint.Record
	if full {
		// The snapshot holds every change so far; one made while it is
		// written sets needFull or the dirty sets again.
		s.needFull = false
		clear(s.dirtyIPs)
		clear(s.dirtyKeys)
		file = s.snapshotLocked()
	} else {
		rec = s.recordLocked()
	}
	s.mu.Unlock()

	var err error
	if full {
		err = s.compact(file)
	} else {
		err = s.journal.Append(rec)
	}

	s.mu.Lock()
	s.commit.inflight = nil
	switch {
	case err != nil:
		// The failed record's changes are no longer in the dirty sets,
		// and the journal's tail is in doubt: the next write is a
		// whole snapshot, which holds them whatever happened.
		s.needFull = true
	case b.version > s.commit.durable:
		s.commit.durable = b.version
	}
	s.mu.Unlock()
	if err != nil {
		s.log.Error("checkpoint write failed; the changes of this batch are not durable and their callers get an error",
			slog.String("path", s.path), slog.Bool("compaction", full), slog.Any("error", err))
	}
	b.err = err
	close(b.done)
}

// needFullLocked decides whether the next write is a compaction: there is
// no journal yet, it is sealed or its tail is in doubt, a change touched
// the whole state, or the journal has grown past compactBytes.
func (s *Store) needFullLocked() bool {
	return s.needFull || s.journal == nil || s.journal.Sealed() || s.journal.Size() > s.compactAt.Load()
}

// recordLocked turns what changed since the last record into a journal
// record: each touched address and key as it is now, set or dropped.
func (s *Store) recordLocked() checkpoint.Record {
	now := s.now()
	r := checkpoint.Record{Unproven: s.unproven, Cursors: s.cursorList()}
	for ip := range s.dirtyIPs {
		if c, ok := s.addressStateLocked(ip, now); ok {
			r.Addresses = append(r.Addresses, c)
		} else {
			r.DropAddresses = append(r.DropAddresses, ip)
		}
	}
	for k := range s.dirtyKeys {
		if a, ok := s.assignments[k]; ok {
			r.Assignments = append(r.Assignments, assignmentRecord(a))
		} else {
			r.DropAssignments = append(r.DropAssignments, checkpoint.AssignmentKey{Network: k.Network, SandboxID: k.SandboxID, IfName: k.IfName})
		}
	}
	clear(s.dirtyIPs)
	clear(s.dirtyKeys)
	return r
}

// dirtyLocked notes that the record of ip and of key may have changed.
func (s *Store) dirtyLocked(ip netip.Addr, key Key) {
	s.dirtyIPs[ip] = struct{}{}
	s.dirtyKeys[key] = struct{}{}
}

// compact writes file as the new snapshot and starts a fresh journal after
// it. The old journal is sealed first, naming the new snapshot, so a crash
// before the fresh journal is in place leaves an old journal that Load
// knows the snapshot already holds. Only the writer goroutine (or Open,
// before it starts) calls it.
func (s *Store) compact(file checkpoint.File) error {
	data, err := checkpoint.Encode(file)
	if err != nil {
		return err
	}
	sum := checkpoint.Sum(data)
	if s.journal != nil {
		if err := s.journal.Seal(sum); err != nil {
			return err
		}
	}
	if err := checkpoint.WriteAtomic(s.path, data); err != nil {
		return err
	}
	j, err := checkpoint.CreateJournal(checkpoint.JournalPath(s.path), sum)
	if err != nil {
		// The snapshot holds everything; the sealed journal takes no
		// more records, so the next write compacts again.
		return err
	}
	s.closeJournal()
	s.journal = j
	return nil
}
