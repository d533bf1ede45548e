package datastore

import (
	"context"
	"fmt"
	"log/slog"

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
	file := s.snapshotLocked()
	s.mu.Unlock()

	err := s.writeFile(file)

	s.mu.Lock()
	s.commit.inflight = nil
	if err == nil && b.version > s.commit.durable {
		s.commit.durable = b.version
	}
	s.mu.Unlock()
	if err != nil {
		s.log.Error("checkpoint write failed; the changes of this batch are not durable and their callers get an error",
			slog.String("path", s.path), slog.Any("error", err))
	}
	b.err = err
	close(b.done)
}

func (s *Store) writeFile(file checkpoint.File) error {
	data, err := checkpoint.Encode(file)
	if err != nil {
		return err
	}
	if err := checkpoint.WriteAtomic(s.path, data); err != nil {
		return err
	}
	return nil
}
