package datastore

// The store's side of persistence: every change goes through apply, and
// the Committer (package persist) reads what changed through the Source
// methods here, under s.mu.

import (
	"github.com/sandboxipam/sandboxipam/ipamd/checkpoint"
	"github.com/sandboxipam/sandboxipam/ipamd/datastore/persist"
	"github.com/sandboxipam/sandboxipam/ipamd/datastore/state"
)

// source is the Store as the Committer reads it, under s.mu: a type of
// its own so that the Source methods are no part of the Store's API.
type source Store

var _ persist.Source = (*source)(nil)

// SnapshotLocked implements persist.Source.
func (src *source) SnapshotLocked() checkpoint.File { return (*Store)(src).snapshotLocked() }

// RecordLocked implements persist.Source.
func (src *source) RecordLocked() checkpoint.Record { return (*Store)(src).recordLocked() }

// apply makes one change to the state, noting what it touched for the
// next journal record.
func (s *Store) apply(c state.Change) { s.st.Apply(c, &s.touched) }

// changedLocked records a change and returns the batch that will write it.
// A change that touched the whole state (the unproven flag) is written as
// a snapshot.
func (s *Store) changedLocked() *persist.Batch {
	s.sweepRetiringLocked()
	if s.touched.Whole {
		s.commit.NeedFullLocked()
	}
	return s.commit.ChangedLocked()
}

// snapshotLocked is the whole state in the checkpoint form, the node
// source's record with it. Encoding and writing happen outside the lock.
func (s *Store) snapshotLocked() checkpoint.File {
	now := s.now()
	s.apply(state.Prune(now))
	f := s.st.Snapshot(now)
	if rec := s.nodeCheckpointLocked(); rec != nil {
		f.Node = &checkpoint.NodeRanges{Name: rec.Name, UID: rec.UID, PodCIDRs: rec.PodCIDRs, Retiring: rec.Retiring}
	}
	// The snapshot holds every change so far.
	s.touched.Reset()
	return f
}

// recordLocked is what changed since the last record or snapshot, as a
// journal record.
func (s *Store) recordLocked() checkpoint.Record {
	return s.st.Record(&s.touched, s.now())
}
