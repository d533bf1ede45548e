package datastore

// SetCompactBytes sets the journal size past which a commit compacts, for
// the length of a test.
func SetCompactBytes(cleanup func(func()), n int64) {
	old := compactBytes
	compactBytes = n
	cleanup(func() { compactBytes = old })
}
