package datastore

// SetGrowthWaiting records what the pool waits for to grow (the pool
// source: "a new block of IPPool X: the API server is unreachable"). While
// it is set, an ADD that finds no free address of a family fails with
// ErrPoolNotReady naming it, which the CNI plugin answers with code 11
// (try again later) rather than "exhausted": the node is out of
// addresses only until its source claims another block. An empty why
// clears it, and exhaustion is ErrPoolExhausted again.
func (s *Store) SetGrowthWaiting(why string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.growthWaiting = why
}
