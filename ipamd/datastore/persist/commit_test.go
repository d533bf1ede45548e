package persist

import (
	"context"
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/sandboxipam/sandboxipam/ipamd/checkpoint"
)

// fakeSource is a state that is one counter: each change counts one up,
// and a snapshot or record carries the count as its cursor, so the file
// on disk says which change it holds last.
type fakeSource struct {
	mu                 sync.Mutex
	n                  byte
	snapshots, records int
}

func (f *fakeSource) cursor() []netip.Addr {
	return []netip.Addr{netip.AddrFrom4([4]byte{10, 0, 0, f.n})}
}

func (f *fakeSource) SnapshotLocked() checkpoint.File {
	f.snapshots++
	return checkpoint.File{Cursors: f.cursor()}
}

func (f *fakeSource) RecordLocked() checkpoint.Record {
	f.records++
	return checkpoint.Record{Cursors: f.cursor()}
}

// change makes callers changes under the lock, each joining the batch
// ChangedLocked returns: all of them one batch, as the writer cannot take
// it before the lock is let go.
func (f *fakeSource) change(c *Committer, callers int) []*Batch {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]*Batch, callers)
	for i := range out {
		f.n++
		out[i] = c.ChangedLocked()
	}
	return out
}

func (f *fakeSource) counts() (snapshots, records int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.snapshots, f.records
}

// start returns a running Committer whose first snapshot is written, and
// its source with the counts at zero.
func start(t *testing.T) (*Committer, *fakeSource, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "state")
	src := &fakeSource{}
	c := New(Config{Path: path, Lock: &src.mu, Source: src})
	if err := c.Compact(src.SnapshotLocked()); err != nil {
		t.Fatal(err)
	}
	src.snapshots = 0
	c.Start()
	return c, src, path
}

// onDisk is the count the checkpoint at path holds last, and how many
// journal records follow its snapshot.
func onDisk(t *testing.T, path string) (byte, int) {
	t.Helper()
	st, err := checkpoint.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return st.File.Cursors[0].As4()[3], st.Journal.Records
}

// waitAll waits for every caller's batch, each in its own goroutine as a
// caller would, and returns their errors.
func waitAll(batches []*Batch) []error {
	errs := make([]error, len(batches))
	var wg sync.WaitGroup
	for i, b := range batches {
		wg.Go(func() { errs[i] = b.Wait(context.Background()) })
	}
	wg.Wait()
	return errs
}

func closeAtEnd(t *testing.T, c *Committer) {
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Error(err)
		}
	})
}

func TestCallersShareOneWrite(t *testing.T) {
	c, src, path := start(t)
	closeAtEnd(t, c)
	batches := src.change(c, 8)
	for i, err := range waitAll(batches) {
		if err != nil {
			t.Errorf("caller %d: %v", i, err)
		}
		if batches[i] != batches[0] {
			t.Errorf("caller %d waits on another batch", i)
		}
	}
	if snaps, recs := src.counts(); snaps != 0 || recs != 1 {
		t.Errorf("%d snapshots and %d records written, want one record", snaps, recs)
	}
	if n, records := onDisk(t, path); n != 8 || records != 1 {
		t.Errorf("on disk: change %d in %d records, want change 8 in one", n, records)
	}
	src.mu.Lock()
	b := c.SyncLocked()
	src.mu.Unlock()
	if b != nil {
		t.Errorf("SyncLocked after a durable write = %v, want nil: nothing to wait for", b)
	}
}

func TestFailedAppendFailsItsBatchAndCompacts(t *testing.T) {
	c, src, path := start(t)
	closeAtEnd(t, c)
	if err := os.Remove(checkpoint.JournalPath(path)); err != nil {
		t.Fatal(err)
	}
	for i, err := range waitAll(src.change(c, 2)) {
		if !errors.Is(err, checkpoint.ErrJournalGone) {
			t.Errorf("caller %d of the failed batch: %v, want ErrJournalGone", i, err)
		}
	}
	// A caller that changes nothing still waits for what it saw to land,
	// and one that changes something joins that write.
	src.mu.Lock()
	retry := c.SyncLocked()
	src.n++
	next := c.ChangedLocked()
	src.mu.Unlock()
	if retry == nil || next != retry {
		t.Fatalf("after a failed write, SyncLocked = %p and ChangedLocked = %p: want one batch, the retry", retry, next)
	}
	if err := next.Wait(context.Background()); err != nil {
		t.Errorf("the retry: %v", err)
	}
	if snaps, recs := src.counts(); snaps != 1 || recs != 1 {
		t.Errorf("%d snapshots and %d records: want the failed record, then a compaction", snaps, recs)
	}
	if n, records := onDisk(t, path); n != 3 || records != 0 {
		t.Errorf("on disk: change %d and %d records, want change 3 in a fresh snapshot", n, records)
	}
}

func TestCompactsPastTheJournalSize(t *testing.T) {
	c, src, path := start(t)
	closeAtEnd(t, c)
	waitAll(src.change(c, 1))
	if n, records := onDisk(t, path); n != 1 || records != 1 {
		t.Fatalf("on disk: change %d in %d records, want change 1 in one", n, records)
	}
	c.SetCompactAt(1)
	if err := waitAll(src.change(c, 1))[0]; err != nil {
		t.Fatal(err)
	}
	if snaps, recs := src.counts(); snaps != 1 || recs != 1 {
		t.Errorf("%d snapshots and %d records, want one of each", snaps, recs)
	}
	if n, records := onDisk(t, path); n != 2 || records != 0 {
		t.Errorf("on disk: change %d and %d records, want change 2 in a fresh snapshot", n, records)
	}
}

func TestCloseWritesWhatIsPending(t *testing.T) {
	c, src, path := start(t)
	b := src.change(c, 1)[0]
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-b.done:
	default:
		t.Fatal("Close returned before the pending batch was written")
	}
	if n, _ := onDisk(t, path); n != 1 {
		t.Errorf("on disk: change %d, want 1", n)
	}
}
