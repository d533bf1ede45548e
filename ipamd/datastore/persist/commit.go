// Package persist makes the datastore's changes durable: the Committer
// owns group commit (which in-memory version is on disk, the pending and
// in-flight batches, the single writer goroutine), the journal it appends
// one record per batch to, and compaction into a new snapshot (package
// checkpoint's format).
//
// It reads the state only through Source, under the store's lock, which
// the Committer shares (Config.Lock): a batch's version and the snapshot
// or record that holds it must be taken in one critical section with the
// changes, or a change could be acknowledged by a write that missed it.
// The store owns the state (package state) and decides when a change needs
// a whole snapshot (NeedFullLocked); the Committer decides when to write
// and how, and owns the rule that after a failed write the next one is a
// whole snapshot.
//
// Concurrent callers share one write and one fdatasync: a single writer
// goroutine collects what the batch changed (Source.RecordLocked) and
// appends it as one record to the journal, then wakes every caller whose
// change the record holds. Rewriting the whole state with two fsyncs per
// commit cost the CNI path more than host-local takes; an append costs one
// small write and one fdatasync whatever the size of the state.
//
// Compaction writes the whole state as a new snapshot (checkpoint.
// WriteAtomic) and starts a fresh journal. It happens in the commit path,
// in place of an append, for the commit that finds the journal past
// compactBytes, after a failed append (the journal's tail is then in
// doubt), for the first commit of a new store (there is no snapshot for a
// journal to follow yet), and for changes that touch much of the state at
// once (Adopt, the unproven state at Open): that one commit costs what
// every commit cost before the journal, and callers arriving meanwhile
// join the next batch as behind any write. Doing it in the background would need a second
// copy of the state and a journal switch under concurrent appends, for a
// cost paid once per thousands of commits.
//
// See docs/architecture.md for the life of an ADD through both.
package persist

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/sandboxipam/sandboxipam/ipamd/checkpoint"
)

// Source is what the Committer reads of the store. Both methods are
// called with Config.Lock held, and both forget what they return: what a
// snapshot or record holds is no longer a change to write.
type Source interface {
	// SnapshotLocked returns the whole state as a snapshot.
	SnapshotLocked() checkpoint.File
	// RecordLocked returns what changed since the last snapshot or
	// record, as a journal record.
	RecordLocked() checkpoint.Record
}

// Config configures New.
type Config struct {
	// Path is the snapshot file; its journal is checkpoint.JournalPath.
	Path string
	// Lock is the store's lock, under which every change is made and
	// every *Locked method is called.
	Lock   sync.Locker
	Source Source
	Log    *slog.Logger
}

// Committer writes the store's changes; see the package doc.
type Committer struct {
	path string
	mu   sync.Locker
	src  Source
	log  *slog.Logger

	// version counts changes; durable is the newest version a successful
	// write holds. pending collects callers whose change no write has
	// picked up yet; inflight is the batch being written. All under mu.
	version  uint64
	durable  uint64
	pending  *Batch
	inflight *Batch
	// needFull makes the next write a compaction (see needCompaction).
	needFull bool
	// journal is the open journal, nil until the first compaction. Only
	// the writer goroutine touches it once Start has returned.
	journal *checkpoint.JournalWriter
	// compactAt is the journal size past which a commit compacts:
	// compactBytes, lowered by tests to see compaction often.
	compactAt atomic.Int64

	started bool
	wake    chan struct{}
	stop    chan struct{}
	stopped chan struct{}
}

// Batch is one group commit: every caller that joined it waits on done
// and gets err.
type Batch struct {
	version uint64
	done    chan struct{}
	err     error
}

// compactBytes is the journal size past which the next commit compacts:
// replay at start stays in the tens of milliseconds, and a compaction (a
// whole snapshot) is paid once per thousands of commits.
const compactBytes int64 = 1 << 20

// New returns a Committer with no journal yet: Resume one Load found, or
// Compact, then Start.
func New(cfg Config) *Committer {
	c := &Committer{path: cfg.Path, mu: cfg.Lock, src: cfg.Source, log: cfg.Log,
		wake: make(chan struct{}, 1), stop: make(chan struct{}), stopped: make(chan struct{})}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	c.compactAt.Store(compactBytes)
	return c
}

// SetCompactAt sets the journal size past which a commit compacts.
func (c *Committer) SetCompactAt(n int64) { c.compactAt.Store(n) }

// Start starts the writer goroutine.
func (c *Committer) Start() {
	c.started = true
	go c.writer()
}

// ChangedLocked records a change and returns the batch that will write it.
func (c *Committer) ChangedLocked() *Batch {
	c.version++
	return c.joinPendingLocked()
}

// NeedFullLocked makes the next write a whole snapshot: a change touched
// much of the state at once, or one only a snapshot records.
func (c *Committer) NeedFullLocked() { c.needFull = true }

func (c *Committer) joinPendingLocked() *Batch {
	if c.pending == nil {
		c.pending = &Batch{done: make(chan struct{})}
		select {
		case c.wake <- struct{}{}:
		default:
		}
	}
	return c.pending
}

// SyncLocked returns the batch a caller must wait on so that everything it
// saw in memory is on disk, or nil when it already is. It is how a
// repeated ADD or DEL after a failed write waits for that change to land.
func (c *Committer) SyncLocked() *Batch {
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
		return c.joinPendingLocked()
	}
}

// Wait blocks until b is written; a nil b is written already. A cancelled
// ctx returns early; the change is then still written, and a retried call
// finds it.
func (b *Batch) Wait(ctx context.Context) error {
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

// Close writes what is pending, stops the writer and closes the journal,
// and returns the error of that last write. The store calls it once no
// more changes come (its closed flag is set), without its lock.
func (c *Committer) Close() error {
	if !c.started {
		c.closeJournal()
		return nil
	}
	c.mu.Lock()
	pending := c.SyncLocked()
	c.mu.Unlock()
	var err error
	if pending != nil {
		<-pending.done
		err = pending.err
	}
	close(c.stop)
	<-c.stopped
	c.closeJournal()
	return err
}

// writer is the single goroutine that writes checkpoints, one batch at a
// time, so each write holds every change made before its snapshot.
func (c *Committer) writer() {
	defer close(c.stopped)
	for {
		select {
		case <-c.wake:
			c.writeBatch()
		case <-c.stop:
			c.writeBatch()
			return
		}
	}
}

// writeBatch writes the pending batch, if any, and wakes its callers.
func (c *Committer) writeBatch() {
	c.mu.Lock()
	b := c.pending
	if b == nil {
		c.mu.Unlock()
		return
	}
	c.pending = nil
	c.inflight = b
	b.version = c.version
	full := c.needCompactionLocked()
	var file checkpoint.File
	var rec checkpoint.Record
	if full {
		// The snapshot holds every change so far; one made while it is
		// written sets needFull or touches the state again.
		c.needFull = false
		file = c.src.SnapshotLocked()
	} else {
		rec = c.src.RecordLocked()
	}
	c.mu.Unlock()

	var err error
	if full {
		err = c.Compact(file)
	} else {
		err = c.journal.Append(rec)
	}
	c.finish(b, full, err)
}

// finish records the outcome of b's write and wakes its callers.
func (c *Committer) finish(b *Batch, full bool, err error) {
	c.mu.Lock()
	c.inflight = nil
	switch {
	case err != nil:
		// The failed record's changes are no longer among what the
		// source has to write, and the journal's tail is in doubt: the
		// next write is a whole snapshot, which holds them whatever
		// happened.
		c.needFull = true
	case b.version > c.durable:
		c.durable = b.version
	}
	c.mu.Unlock()
	if err != nil {
		c.log.Error("checkpoint write failed; the changes of this batch are not durable and their callers get an error",
			slog.String("path", c.path), slog.Bool("compaction", full), slog.Any("error", err))
	}
	b.err = err
	close(b.done)
}
