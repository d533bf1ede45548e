package datastore

// SetCompactBytes lowers the journal size past which s's commits compact,
// so a test sees compaction often.
func SetCompactBytes(s *Store, n int64) { s.commit.SetCompactAt(n) }
