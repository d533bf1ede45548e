package datastore_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/sandboxipam/sandboxipam/ipamd/checkpoint"
	"github.com/sandboxipam/sandboxipam/ipamd/datastore"
)

// copyV1 copies the v1 checkpoint and journal of testdata/v1 into a test
// directory and returns the checkpoint's path there.
func copyV1(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "state")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"ipamd.checkpoint", "ipamd.checkpoint.journal"} {
		data, err := os.ReadFile(filepath.Join("testdata", "v1", name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(data[:40], []byte(" v1 ")) {
			t.Fatalf("testdata %s is not v1: %.40q", name, data)
		}
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dir, "ipamd.checkpoint")
}

// An existing node's state, written by the v1 code, survives the upgrade:
// assignments with their listing times, a cooling release, a quarantine,
// the cursor; the first write rewrites both files as v2, which read back
// the same.
func TestUpgradeFromV1(t *testing.T) {
	f := newFixture(t, "198.18.0.0/24")
	f.path = copyV1(t)
	f.clock.Advance(2 * time.Second) // 12:00:02, when the v1 store closed
	open := func() *datastore.Store {
		s, err := datastore.Open(context.Background(), datastore.Options{Path: f.path, Now: f.clock.Now, Logger: testLogger(t),
			Cooldown: time.Hour, ProveWhenMissing: true})
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		t.Cleanup(func() { _ = s.Close() })
		f.fill(s)
		return s
	}
	s := open()
	if r := s.Recovery(); r.Checkpoint != datastore.RecoveryLoaded || r.Assignments != 4 || r.Quarantined != 1 {
		t.Fatalf("Recovery = %+v, want loaded, 4 assignments, 1 quarantined", r)
	}
	listed := time.Date(2026, 12, 2, 12, 0, 1, 0, time.UTC)
	want := map[string]string{"sb-a/pods/eth0": "198.18.0.1", "sb-c/pods/eth0": "198.18.0.3", "sb-d/pods/eth0": "198.18.0.4", "sb-e/pods/eth0": "198.18.0.5"}
	check := func(s *datastore.Store) {
		t.Helper()
		as := s.Assignments()
		if got := ipsOf(as); !reflect.DeepEqual(got, want) {
			t.Fatalf("assignments %v, want %v", got, want)
		}
		for _, a := range as {
			wantListed := a.SandboxID != "sb-e"
			if !a.ListedAt.IsZero() != wantListed || (wantListed && !a.ListedAt.Equal(listed)) || a.Pod != pod(a.SandboxID[3:]) ||
				a.Address.Subnet != netip.MustParsePrefix("198.18.0.0/24") || a.Address.Group != "static" || len(a.Extra) != 0 {
				t.Fatalf("assignment %+v", a)
			}
		}
		if st := s.Stats(); st.Total != 254 || st.Assigned != 4 || st.Cooling != 1 || st.Quarantined != 1 || st.Free != 248 {
			t.Fatalf("Stats = %+v: want .2 cooling and .9 quarantined", st)
		}
	}
	check(s)
	// The cursor survived (.5): the next address is .6; .2 cools down
	// and .9 stays quarantined.
	mustAssign(t, s, key("sb-f"), pod("f"), "198.18.0.6")
	want["sb-f/pods/eth0"] = "198.18.0.6"
	for _, name := range []string{f.path, checkpoint.JournalPath(f.path)} {
		data, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(data[:40], []byte(" v2 ")) {
			t.Fatalf("%s after the first write: %.40q, want v2", filepath.Base(name), data)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = open()
	check2 := s.Assignments()
	if got := ipsOf(check2); !reflect.DeepEqual(got, want) {
		t.Fatalf("after the v2 rewrite: %v, want %v", got, want)
	}
	if st := s.Stats(); st.Cooling != 1 || st.Quarantined != 1 || st.Assigned != 5 {
		t.Fatalf("Stats after the v2 rewrite = %+v", st)
	}
}

// A checkpoint of a newer format (a downgrade) is refused with a clear
// error, never misread, never moved aside as corrupt, never overwritten.
func TestNewerFormatIsRefusedAndLeftAlone(t *testing.T) {
	for _, which := range []string{"snapshot", "journal"} {
		t.Run(which, func(t *testing.T) {
			path := copyV1(t)
			target := path
			if which == "journal" {
				target = checkpoint.JournalPath(path)
			}
			data, err := os.ReadFile(target)
			if err != nil {
				t.Fatal(err)
			}
			// A v9 header; for the journal, with its header CRC right,
			// so only the version is wrong.
			if which == "snapshot" {
				data = bytes.Replace(data, []byte(" v1 "), []byte(" v9 "), 1)
			} else {
				data = v9Journal(t, data)
			}
			if err := os.WriteFile(target, data, 0o600); err != nil {
				t.Fatal(err)
			}
			_, err = datastore.Open(context.Background(), datastore.Options{Path: path, Logger: testLogger(t), ProveWhenMissing: true})
			if !errors.Is(err, checkpoint.ErrNewer) {
				t.Fatalf("Open = %v, want ErrNewer", err)
			}
			if want := "format v9, this build reads v1 to v2"; !bytes.Contains([]byte(err.Error()), []byte(want)) {
				t.Fatalf("error %q does not say %q", err, want)
			}
			after, err := os.ReadFile(target)
			if err != nil || !bytes.Equal(after, data) {
				t.Fatalf("the newer file was touched: %v", err)
			}
			if m, _ := filepath.Glob(path + "*.corrupt-*"); len(m) != 0 {
				t.Fatalf("moved aside: %v", m)
			}
		})
	}
}

// v9Journal rewrites a journal's header as version 9, its CRC recomputed.
func v9Journal(t *testing.T, data []byte) []byte {
	t.Helper()
	line, rest, _ := bytes.Cut(data, []byte("\n"))
	text, _, ok := bytes.Cut(line, []byte(" crc="))
	if !ok {
		t.Fatalf("journal header %q", line)
	}
	text = bytes.Replace(text, []byte(" v1 "), []byte(" v9 "), 1)
	crc := crc32.Checksum(text, crc32.MakeTable(crc32.Castagnoli))
	return append(fmt.Appendf(nil, "%s crc=%08x\n", text, crc), rest...)
}
