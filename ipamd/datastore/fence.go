package datastore

// SetFenced records why the IP source forbids new addresses (the pool
// source: its Lease, ipamd's evidence of life, went unrenewed for longer
// than ipSource.pool.lease.fenceAfter, so the reclaimer may soon take its
// blocks). While it is set, an ADD that needs a new address fails with
// ErrFenced naming it, which the CNI plugin answers with code 11 (try
// again later); an ADD repeated for a key that holds an address still
// gets that address, and DEL, GC and the reconciler's releases go on. An
// empty why lifts the fence.
func (s *Store) SetFenced(why string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fenced = why
}

// Fenced is what SetFenced recorded, or "".
func (s *Store) Fenced() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.fenced
}
