package datastore

import (
	"time"

	"github.com/sandboxipam/sandboxipam/ipamd/datastore/state"
)

// noteDeletedLocked records that this store answered key's CNI DEL. CRI-O
// keeps reporting a stopped sandbox's address after its DEL: such a
// report is stale, not a holding, and must neither be adopted nor
// quarantine the address the DEL released (join.Join drops it: see
// viewLocked). The fact is part of the state (package state's
// deleted.go), written with the release that answered the DEL, so a
// restart keeps treating the report as stale; it is forgotten once a
// listing no longer shows the sandbox, or an ADD wires it again.
func (s *Store) noteDeletedLocked(key Key, now time.Time) {
	s.apply(state.NoteDeleted(key, now))
}

// forgetDeletedLocked drops the deleted sandboxes a listing no longer
// shows: their reports cannot come back. It returns how many it dropped.
func (s *Store) forgetDeletedLocked(listed map[string]struct{}) int {
	var gone []Key
	for k := range s.st.DeletedKeys() {
		if _, ok := listed[k.SandboxID]; !ok {
			gone = append(gone, k)
		}
	}
	for _, k := range gone {
		s.apply(state.ForgetDeleted(k))
	}
	return len(gone)
}
