package state

// The sandboxes whose CNI DEL was answered. CRI-O keeps reporting a
// stopped sandbox's address after its DEL (kubelet keeps a completed
// pod's last sandbox until the pod is deleted, so a completed Job pod's
// sandbox does so for as long as it exists): such a report is stale, not
// a holding, and must neither be adopted nor quarantine the address the
// DEL released (join.Join drops it). Only the store knows the DEL came,
// so it is part of the state and its checkpoint: a restart keeps
// treating the report as stale. Bounded twice: a listing that no longer
// shows the sandbox forgets it (its reports cannot come back), and
// beyond MaxDeleted the oldest is forgotten.

import (
	"cmp"
	"iter"
	"maps"
	"slices"
	"time"

	"github.com/sandboxipam/sandboxipam/ipamd/checkpoint"
)

// MaxDeleted bounds the sandboxes remembered as deleted while no listing
// comes to prune them (no adapter): beyond it the oldest deletedTrim are
// forgotten at once, and a stale report of theirs is quarantined as
// before.
const MaxDeleted = 4096

// deletedTrim is how many of the oldest are forgotten when MaxDeleted is
// passed: in a batch, so that a node with no listing pays one sort per
// deletedTrim DELs, not a scan of MaxDeleted entries on every DEL.
const deletedTrim = MaxDeleted / 8

// DeletedKeys yields the keys whose DEL was answered, in no order.
func (st *State) DeletedKeys() iter.Seq[Key] {
	return func(yield func(Key) bool) {
		for k := range st.deleted {
			if !yield(k) {
				return
			}
		}
	}
}

// DeletedLen counts the keys whose DEL was answered.
func (st *State) DeletedLen() int { return len(st.deleted) }

func (st *State) noteDeleted(key Key, at time.Time, t *Touched) {
	if _, ok := st.deleted[key]; ok {
		return
	}
	st.deleted[key] = at
	t.deleted(key)
	if len(st.deleted) <= MaxDeleted {
		return
	}
	// Oldest first; the key just noted is never among them.
	keys := slices.Collect(maps.Keys(st.deleted))
	slices.SortFunc(keys, func(a, b Key) int {
		return cmp.Or(boolOrder(a == key, b == key), st.deleted[a].Compare(st.deleted[b]), CompareKeys(a, b))
	})
	for _, k := range keys[:deletedTrim] {
		delete(st.deleted, k)
		t.deleted(k)
	}
}

// boolOrder orders false before true.
func boolOrder(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}

// deletedRecords is the deleted keys in the checkpoint form, in key
// order; nil when there are none, so a store that never answered a DEL
// writes the file an older build wrote.
func (st *State) deletedRecords() []checkpoint.Deleted {
	if len(st.deleted) == 0 {
		return nil
	}
	out := make([]checkpoint.Deleted, 0, len(st.deleted))
	for _, k := range slices.SortedFunc(maps.Keys(st.deleted), CompareKeys) {
		out = append(out, deletedRecord(k, st.deleted[k]))
	}
	return out
}

func deletedRecord(k Key, at time.Time) checkpoint.Deleted {
	return checkpoint.Deleted{Network: k.Network, SandboxID: k.SandboxID, IfName: k.IfName, At: at}
}

// recordDeleted adds t's touched deleted keys to r, as they are now.
func (st *State) recordDeleted(t *Touched, r *checkpoint.Record) {
	for k := range t.Deleted {
		if at, ok := st.deleted[k]; ok {
			r.Deleted = append(r.Deleted, deletedRecord(k, at))
		} else {
			r.DropDeleted = append(r.DropDeleted, checkpoint.AssignmentKey{Network: k.Network, SandboxID: k.SandboxID, IfName: k.IfName})
		}
	}
	slices.SortFunc(r.Deleted, func(a, b checkpoint.Deleted) int {
		return CompareKeys(Key{a.Network, a.SandboxID, a.IfName}, Key{b.Network, b.SandboxID, b.IfName})
	})
	slices.SortFunc(r.DropDeleted, func(a, b checkpoint.AssignmentKey) int { return CompareKeys(Key(a), Key(b)) })
}
