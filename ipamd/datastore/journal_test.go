package datastore_test

import (
	"bytes"
	"context"
	"errors"
	"maps"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/sandboxipam/sandboxipam/ipamd/checkpoint"
	"github.com/sandboxipam/sandboxipam/ipamd/datastore"
)

func journalOf(f *fixture) string { return checkpoint.JournalPath(f.path) }

func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return info.Size()
}

// A commit is an append to the journal, not a rewrite of the snapshot.
func TestCommitAppendsToTheJournal(t *testing.T) {
	f := newFixture(t, "198.18.0.0/29")
	s := f.open()
	snapshot, err := os.ReadFile(f.path)
	if err != nil {
		t.Fatal(err)
	}
	before := fileSize(t, journalOf(f))
	mustAssign(t, s, key("a"), pod("a"), "198.18.0.1")
	mustRelease(t, s, key("a"), "198.18.0.1")
	after, err := os.ReadFile(f.path)
	if err != nil || !bytes.Equal(after, snapshot) {
		t.Fatalf("the snapshot was rewritten by a commit (%v)", err)
	}
	if grown := fileSize(t, journalOf(f)) - before; grown <= 0 || grown > 2048 {
		t.Fatalf("journal grew by %d bytes for two commits", grown)
	}
}

// A crash mid-append leaves a torn last record: it was never acknowledged,
// so it is cut off and everything acknowledged before it is there.
func TestTornJournalTailIsCutOff(t *testing.T) {
	tails := map[string]func(good, torn []byte) []byte{
		"half a record": func(good, torn []byte) []byte { return torn[:len(good)+(len(torn)-len(good))/2] },
		"frame only":    func(good, torn []byte) []byte { return torn[:len(good)+5] },
		"zero filled":   func(good, torn []byte) []byte { return append(bytes.Clone(good), make([]byte, 4096)...) },
		"end never reached the disk": func(good, torn []byte) []byte {
			out := bytes.Clone(torn)
			clear(out[len(out)-7:])
			return out
		},
	}
	for name, tear := range tails {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, "198.18.0.0/29")
			s := f.open()
			mustAssign(t, s, key("a"), pod("a"), "198.18.0.1")
			mustAssign(t, s, key("b"), pod("b"), "198.18.0.2")
			mustRelease(t, s, key("a"), "198.18.0.1")
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			good, err := os.ReadFile(journalOf(f))
			if err != nil {
				t.Fatal(err)
			}
			s = f.open()
			mustAssign(t, s, key("c"), pod("c"), "198.18.0.3") // the append the crash tears
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			full, err := os.ReadFile(journalOf(f))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(journalOf(f), tear(good, full), 0o600); err != nil {
				t.Fatal(err)
			}

			s = f.open()
			if r := s.Recovery(); r.Checkpoint != datastore.RecoveryLoaded || r.Assignments != 1 || s.Unproven() {
				t.Fatalf("Recovery = %+v, want loaded with b only", r)
			}
			if got, want := ipsOf(s.Assignments()), map[string]string{"b/pods/eth0": "198.18.0.2"}; !maps.Equal(got, want) {
				t.Fatalf("after the torn tail: %v, want %v", got, want)
			}
			if st, err := checkpoint.Load(f.path); err != nil || st.Journal.Torn != 0 {
				t.Fatalf("journal after open: %+v, %v; want the torn tail cut off", st.Journal, err)
			}
			// .1 still cools down: its release was acknowledged.
			if st := s.Stats(); st.Cooling != 1 {
				t.Fatalf("Stats = %+v, want .1 cooling", st)
			}
			// Appends after the cut are read back, not taken for damage.
			mustAssign(t, s, key("d"), pod("d"), "198.18.0.3")
			s = f.reopen(s)
			want := map[string]string{"b/pods/eth0": "198.18.0.2", "d/pods/eth0": "198.18.0.3"}
			if got := ipsOf(s.Assignments()); !maps.Equal(got, want) || s.Recovery().Checkpoint != datastore.RecoveryLoaded {
				t.Fatalf("after reopen: %v (%+v), want %v", got, s.Recovery(), want)
			}
		})
	}
}

// journalDamage returns the ways a journal gets lost that a crash cannot
// explain: each must start the store unproven, never silently empty.
func journalDamage() map[string]func(t *testing.T, f *fixture, journal []byte) []byte {
	return map[string]func(t *testing.T, f *fixture, journal []byte) []byte{
		"record in the middle bit flipped": func(_ *testing.T, _ *fixture, j []byte) []byte {
			out := bytes.Clone(j)
			header := bytes.IndexByte(out, '\n') + 1
			out[header+20] ^= 0x04 // inside the first of three records
			return out
		},
		"length of a middle record damaged": func(_ *testing.T, _ *fixture, j []byte) []byte {
			out := bytes.Clone(j)
			header := bytes.IndexByte(out, '\n') + 1
			out[header+1] ^= 0x40 // claims far more than the file holds
			return out
		},
		"header damaged": func(_ *testing.T, _ *fixture, j []byte) []byte {
			return bytes.Replace(j, []byte("base="), []byte("base=0"), 1)
		},
		"empty": func(*testing.T, *fixture, []byte) []byte { return nil },
		"snapshot missing": func(t *testing.T, f *fixture, j []byte) []byte {
			if err := os.Remove(f.path); err != nil {
				t.Fatal(err)
			}
			return j
		},
		"snapshot from elsewhere": func(t *testing.T, f *fixture, j []byte) []byte {
			other, err := checkpoint.Encode(checkpoint.File{SavedAt: f.clock.Now().Add(time.Hour)})
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(f.path, other, 0o600); err != nil {
				t.Fatal(err)
			}
			return j
		},
	}
}

func TestDamagedJournalStartsUnproven(t *testing.T) {
	for name, damageFn := range journalDamage() {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, "198.18.0.0/29")
			s := f.open()
			mustAssign(t, s, key("a"), pod("a"), "198.18.0.1")
			mustAssign(t, s, key("b"), pod("b"), "198.18.0.2")
			mustAssign(t, s, key("c"), pod("c"), "198.18.0.3")
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			good, err := os.ReadFile(journalOf(f))
			if err != nil {
				t.Fatal(err)
			}
			bad := damageFn(t, f, good)
			if err := os.WriteFile(journalOf(f), bad, 0o600); err != nil {
				t.Fatal(err)
			}

			s = f.open()
			r := s.Recovery()
			if r.Checkpoint != datastore.RecoveryCorrupt || r.Assignments != 0 || r.Quarantined != 6 || r.Detail == "" || !s.Unproven() {
				t.Fatalf("Recovery = %+v, want corrupt with 6 unproven addresses", r)
			}
			kept, err := os.ReadFile(checkpoint.JournalPath(f.path) + ".corrupt-" + corruptedAside(t, f)[len(f.path+".corrupt-"):])
			if err != nil || !bytes.Equal(kept, bad) {
				t.Fatalf("damaged journal not kept aside byte for byte: %v", err)
			}
			if _, err := s.Assign(context.Background(), key("d"), pod("d")); !errors.Is(err, datastore.ErrUnproven) {
				t.Fatalf("Assign before Adopt: err = %v, want ErrUnproven", err)
			}
			// The refusal itself is durable.
			s = f.reopen(s)
			if !s.Unproven() || s.Recovery().Checkpoint != datastore.RecoveryLoaded {
				t.Fatalf("after reopen: unproven %v, %+v", s.Unproven(), s.Recovery())
			}
		})
	}
}

func TestCompactionTriggeredBySize(t *testing.T) {
	f := newFixture(t, "198.18.0.0/24")
	s := f.open()
	datastore.SetCompactBytes(s, 600)
	snapshot, err := os.ReadFile(f.path)
	if err != nil {
		t.Fatal(err)
	}
	compactions := 0
	for i := range 40 {
		k := key("p" + string(rune('a'+i%26)) + string(rune('a'+i/26)))
		if _, err := s.Assign(context.Background(), k, pod(k.SandboxID)); err != nil {
			t.Fatal(err)
		}
		if i%3 == 0 {
			if _, _, err := s.Release(context.Background(), k); err != nil {
				t.Fatal(err)
			}
		}
		now, err := os.ReadFile(f.path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(now, snapshot) {
			compactions++
			snapshot = now
		}
		// One commit may take the journal past the threshold; the next
		// one compacts instead of appending.
		if size := fileSize(t, journalOf(f)); size > 600+2048 {
			t.Fatalf("journal is %d bytes, past the threshold by more than a record or two", size)
		}
	}
	if compactions < 3 {
		t.Fatalf("%d compactions in 54 commits over a 600-byte threshold", compactions)
	}
	want := ipsOf(s.Assignments())
	restarted := crashCopy(t, f)
	if got := ipsOf(restarted.Assignments()); !maps.Equal(got, want) || len(got) != 26 {
		t.Fatalf("after compactions the disk holds %d assignments, memory %d", len(got), len(want))
	}
	if got, want := restarted.Stats(), s.Stats(); got != want {
		t.Fatalf("restarted Stats %+v, live %+v", got, want)
	}
}

// sealAndSnapshot does a compaction's first steps by hand, as a crash
// would cut it short: seal the journal for the snapshot of the state on
// disk and, when write is set, put that snapshot in place, but never
// start the fresh journal.
func sealAndSnapshot(t *testing.T, f *fixture, write bool) {
	t.Helper()
	st, err := checkpoint.Load(f.path)
	if err != nil {
		t.Fatal(err)
	}
	st.File.SavedAt = st.File.SavedAt.Add(1) // a new snapshot is never byte-identical
	data, err := checkpoint.Encode(st.File)
	if err != nil {
		t.Fatal(err)
	}
	j, err := checkpoint.OpenJournal(journalOf(f), st.Journal)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	if err := j.Seal(checkpoint.Sum(data)); err != nil {
		t.Fatal(err)
	}
	if write {
		if err := checkpoint.WriteAtomic(f.path, data); err != nil {
			t.Fatal(err)
		}
	}
}

func TestCrashDuringCompaction(t *testing.T) {
	for _, snapshotLanded := range []bool{true, false} {
		name := "after the snapshot, before the fresh journal"
		if !snapshotLanded {
			name = "after the seal, before the snapshot"
		}
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, "198.18.0.0/29")
			s := f.open()
			mustAssign(t, s, key("a"), pod("a"), "198.18.0.1")
			mustAssign(t, s, key("b"), pod("b"), "198.18.0.2")
			mustRelease(t, s, key("a"), "198.18.0.1")
			mustAssign(t, s, key("c"), pod("c"), "198.18.0.3")
			want, wantStats := ipsOf(s.Assignments()), s.Stats()
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			sealAndSnapshot(t, f, snapshotLanded)

			s = f.open()
			if r := s.Recovery(); r.Checkpoint != datastore.RecoveryLoaded || s.Unproven() {
				t.Fatalf("Recovery = %+v, want loaded", r)
			}
			if got := ipsOf(s.Assignments()); !maps.Equal(got, want) {
				t.Fatalf("after the crash: %v, want %v", got, want)
			}
			if got := s.Stats(); got != wantStats {
				t.Fatalf("Stats = %+v, want %+v", got, wantStats)
			}
			// The journal goes on from the state on disk: the next
			// change and a restart find everything once.
			mustAssign(t, s, key("d"), pod("d"), "198.18.0.4")
			want["d/pods/eth0"] = "198.18.0.4"
			s = f.reopen(s)
			if got := ipsOf(s.Assignments()); !maps.Equal(got, want) || s.Recovery().Checkpoint != datastore.RecoveryLoaded {
				t.Fatalf("after reopen: %v (%+v), want %v", got, s.Recovery(), want)
			}
			st, err := checkpoint.Load(f.path)
			if err != nil || st.Journal.Stale {
				t.Fatalf("Load after reopen: %+v, %v", st.Journal, err)
			}
		})
	}
}

// A snapshot without a journal (a store written before the journal) loads
// as it always did, and gets a journal.
func TestSnapshotWithoutJournalLoads(t *testing.T) {
	f := newFixture(t, "198.18.0.0/29")
	s := f.open()
	mustAssign(t, s, key("a"), pod("a"), "198.18.0.1")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	st, err := checkpoint.Load(f.path)
	if err != nil {
		t.Fatal(err)
	}
	data, err := checkpoint.Encode(st.File)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(f.path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(journalOf(f)); err != nil {
		t.Fatal(err)
	}
	s = f.open()
	if r := s.Recovery(); r.Checkpoint != datastore.RecoveryLoaded || r.Assignments != 1 {
		t.Fatalf("Recovery = %+v", r)
	}
	mustAssign(t, s, key("b"), pod("b"), "198.18.0.2")
	s = f.reopen(s)
	want := map[string]string{"a/pods/eth0": "198.18.0.1", "b/pods/eth0": "198.18.0.2"}
	if got := ipsOf(s.Assignments()); !maps.Equal(got, want) {
		t.Fatalf("after reopen: %v, want %v", got, want)
	}
}

// A complete last record with one flipped byte was acknowledged: it is
// corruption, not a torn tail. Both files are kept aside and nothing is
// handed out, so the acknowledged assignment's address never goes to the
// next ADD.
func TestDamagedLastJournalRecordIsCorruption(t *testing.T) {
	f := newFixture(t, "198.18.0.0/29")
	s := f.open()
	mustAssign(t, s, key("a"), pod("a"), "198.18.0.1")
	mustAssign(t, s, key("b"), pod("b"), "198.18.0.2") // acknowledged: its record is the last
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(journalOf(f))
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)-2] ^= 0x10
	if err := os.WriteFile(journalOf(f), data, 0o600); err != nil {
		t.Fatal(err)
	}
	s = f.open()
	r := s.Recovery()
	if r.Checkpoint != datastore.RecoveryCorrupt || !s.Unproven() || !strings.Contains(r.Detail, "complete but fails its checksum") {
		t.Fatalf("Recovery = %+v, want corrupt: the last record is complete", r)
	}
	kept, err := os.ReadFile(journalOf(f) + strings.TrimPrefix(corruptedAside(t, f), f.path))
	if err != nil || !bytes.Equal(kept, data) {
		t.Fatalf("damaged journal not kept aside byte for byte: %v", err)
	}
	if _, err := s.Assign(context.Background(), key("c"), pod("c")); !errors.Is(err, datastore.ErrUnproven) {
		t.Fatalf("Assign = %v, want ErrUnproven", err)
	}
}
