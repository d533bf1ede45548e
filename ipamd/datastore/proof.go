package datastore

// Proof: whether the store hands out addresses, and what an unproven
// one waits for (kept by package proof's Tracker).

// ProofState says whether the store hands out addresses and, when not,
// what it waits for.
type ProofState struct {
	// Unproven: no trusted checkpoint, and no listing has proven the pool.
	Unproven bool
	// Quarantined counts pool addresses never handed out right now.
	Quarantined int
	// Waiting names what keeps the store unproven: the pods whose
	// addresses nothing accounted for, or that no listing came yet.
	Waiting []string
}

// Proof reports the store's proof state.
func (s *Store) Proof() ProofState {
	s.mu.Lock()
	defer s.mu.Unlock()
	return ProofState{Unproven: s.st.Unproven(), Quarantined: s.statsLocked().Quarantined, Waiting: s.waitingLocked()}
}

// waitingLocked names what an unproven store waits for.
func (s *Store) waitingLocked() []string {
	if !s.st.Unproven() {
		return nil
	}
	return s.proof.Waiting()
}

// NoteWaiting records why an unproven store cannot be proven yet when no
// listing will come (no adapter, or auto refused to pick one), so the
// refusal of every ADD says what the operator must fix.
func (s *Store) NoteWaiting(why string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.st.Unproven() {
		s.proof.NoteWaiting(why)
	}
}

// ReleasedWhileUnproven reports whether a DEL, or an operator's release,
// for key came while the store was unproven: the sandbox gave back
// whatever it held, so a listing that still shows it, reporting no
// address, is no reason to stay unproven.
func (s *Store) ReleasedWhileUnproven(key Key) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.st.Unproven() && s.proof.Released(key)
}
