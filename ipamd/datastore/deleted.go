package datastore

import "time"

// maxDeleted bounds the sandboxes remembered as deleted while no listing
// comes to prune them (no adapter): beyond it the oldest are forgotten,
// and a stale report of theirs is quarantined as before.
const maxDeleted = 4096

// noteDeletedLocked remembers that this store answered key's CNI DEL. CRI-O
// keeps reporting a stopped sandbox's address after its DEL (kubelet keeps
// a completed pod's last sandbox until the pod is deleted, so a completed
// Job pod's sandbox does so for as long as it exists): such a report is
// stale, not a holding, and must neither be adopted nor quarantine the
// address the DEL released (join.Join drops it: see viewLocked). Only
// the store knows the DEL came. Kept in
// memory only, until a listing no longer shows the sandbox: after a
// restart the report is treated as a holding again (adopted by an
// unproven store, quarantined by a proven one) until the pod is deleted.
func (s *Store) noteDeletedLocked(key Key, now time.Time) {
	if s.deleted == nil {
		s.deleted = make(map[Key]time.Time)
	}
	s.deleted[key] = now
	if len(s.deleted) <= maxDeleted {
		return
	}
	var oldest Key
	var at time.Time
	for k, t := range s.deleted {
		if at.IsZero() || t.Before(at) {
			oldest, at = k, t
		}
	}
	delete(s.deleted, oldest)
}

// forgetDeletedLocked drops the deleted sandboxes a listing no longer
// shows: their reports cannot come back.
func (s *Store) forgetDeletedLocked(listed map[string]struct{}) {
	for k := range s.deleted {
		if _, ok := listed[k.SandboxID]; !ok {
			delete(s.deleted, k)
		}
	}
}
