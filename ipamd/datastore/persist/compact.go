package persist

// The journal and compaction: when a write is a whole snapshot, how a
// snapshot replaces the journal, and how a loaded journal is made ready
// for appends.

import (
	"fmt"
	"log/slog"

	"github.com/sandboxipam/sandboxipam/ipamd/checkpoint"
)

// needCompactionLocked decides whether the next write is a compaction:
// there is no journal yet, it is sealed or its tail is in doubt, a change
// touched the whole state, or the journal has grown past compactAt.
func (c *Committer) needCompactionLocked() bool {
	return c.needFull || c.journal == nil || c.journal.Sealed() || c.journal.Size() > c.compactAt.Load()
}

// Compact writes file as the new snapshot and starts a fresh journal after
// it. The old journal is sealed first, naming the new snapshot, so a crash
// before the fresh journal is in place leaves an old journal that Load
// knows the snapshot already holds. Only the writer goroutine (or the
// store's Open, before Start) calls it.
func (c *Committer) Compact(file checkpoint.File) error {
	data, err := checkpoint.Encode(file)
	if err != nil {
		return fmt.Errorf("compact: %w", err)
	}
	sum := checkpoint.Sum(data)
	if c.journal != nil {
		if err := c.journal.Seal(sum); err != nil {
			return fmt.Errorf("compact: %w", err)
		}
	}
	if err := checkpoint.WriteAtomic(c.path, data); err != nil {
		return fmt.Errorf("compact: %w", err)
	}
	j, err := checkpoint.CreateJournal(checkpoint.JournalPath(c.path), sum)
	if err != nil {
		// The snapshot holds everything; the sealed journal takes no
		// more records, so the next write compacts again.
		return fmt.Errorf("compact: %w", err)
	}
	c.closeJournal()
	c.journal = j
	return nil
}

// Resume gets the journal Load found ready for appends, before Start: a
// torn tail (an append a crash cut short, never acknowledged) is cut off;
// a missing journal (a store from before the journal) or a stale one (a
// crash between a compaction's snapshot and its fresh journal) is replaced
// at once by an empty one following the snapshot, so the next compaction
// never meets a journal that follows an older snapshot. An older format is
// rewritten as a whole at the first write: a new record is never appended
// to an old journal.
func (c *Committer) Resume(st checkpoint.State) error {
	c.needFull = st.Journal.Sealed || st.Old
	path := checkpoint.JournalPath(c.path)
	if !st.Journal.Present || st.Journal.Stale {
		if st.Journal.Stale {
			c.log.Info("checkpoint journal already compacted into the snapshot: starting a fresh one", slog.String("path", path))
		}
		j, err := checkpoint.CreateJournal(path, st.Sum)
		if err != nil {
			return fmt.Errorf("resume journal: %w", err)
		}
		c.journal = j
		return nil
	}
	if st.Journal.Torn > 0 {
		c.log.Warn("checkpoint journal ends in a torn record, an unacknowledged write cut short by a crash: cutting it off",
			slog.String("path", path), slog.Int64("bytes", st.Journal.Torn), slog.Int("records_kept", st.Journal.Records))
	}
	j, err := checkpoint.OpenJournal(path, st.Journal)
	if err != nil {
		return fmt.Errorf("resume journal: %w", err)
	}
	c.journal = j
	return nil
}

// closeJournal closes the journal file once nothing appends to it.
func (c *Committer) closeJournal() {
	if c.journal != nil {
		_ = c.journal.Close()
		c.journal = nil
	}
}
