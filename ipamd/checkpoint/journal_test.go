package checkpoint_test

import (
	"bytes"
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sandboxipam/sandboxipam/ipamd/checkpoint"
)

func sampleRecords() []checkpoint.Record {
	at := time.Date(2026, 12, 2, 12, 0, 1, 0, time.UTC)
	return []checkpoint.Record{
		{Seq: 1, Cursors: []netip.Addr{netip.MustParseAddr("198.18.0.3")},
			Addresses: []checkpoint.Address{{IP: netip.MustParseAddr("198.18.0.3"), Subnet: netip.MustParsePrefix("198.18.0.0/24"), Group: "static"}},
			Assignments: []checkpoint.Assignment{{Network: "pods", SandboxID: "new", IfName: "eth0", PodName: "p", Namespace: "default",
				IPs: []netip.Addr{netip.MustParseAddr("198.18.0.3")}, AssignedAt: at}}},
		{Seq: 2, Cursors: []netip.Addr{netip.MustParseAddr("198.18.0.3")},
			Addresses:       []checkpoint.Address{{IP: netip.MustParseAddr("198.18.0.1"), Subnet: netip.MustParsePrefix("198.18.0.0/24"), Group: "static", ReleasedAt: at}},
			DropAssignments: []checkpoint.AssignmentKey{{Network: "pods", SandboxID: "93e629d853d9f70464dd5b54987533ffe87930cb28a6414ddb48c94b69845e85", IfName: "eth0"}}},
		{Seq: 3, Cursors: []netip.Addr{netip.MustParseAddr("198.18.0.3")}, DropAddresses: []netip.Addr{netip.MustParseAddr("198.18.0.2")}},
	}
}

func encodedJournal(t testing.TB, base string, records []checkpoint.Record) []byte {
	t.Helper()
	data, err := checkpoint.EncodeJournal(base, records)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestJournalRoundTripAndReplay(t *testing.T) {
	snap, err := checkpoint.Encode(sample())
	if err != nil {
		t.Fatal(err)
	}
	data := encodedJournal(t, checkpoint.Sum(snap), sampleRecords())
	j, err := checkpoint.DecodeJournal(data)
	if err != nil {
		t.Fatal(err)
	}
	if j.Base != checkpoint.Sum(snap) || j.Torn != 0 || j.Size != int64(len(data)) || !reflect.DeepEqual(j.Records, sampleRecords()) {
		t.Fatalf("decoded %+v", j)
	}
	f, err := checkpoint.Replay(sample(), j.Records)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, a := range f.Assignments {
		got[a.SandboxID] = a.IPs[0].String()
	}
	if want := map[string]string{"c32c237fb529": "2001:db8::5", "new": "198.18.0.3"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("assignments after replay %v, want %v", got, want)
	}
	if len(f.Addresses) != 3 || !slices.Equal(f.Cursors, []netip.Addr{netip.MustParseAddr("198.18.0.3")}) {
		t.Fatalf("after replay: %+v", f)
	}
}

func TestDecodeJournalTornTail(t *testing.T) {
	base := checkpoint.Sum([]byte("x"))
	good := encodedJournal(t, base, sampleRecords()[:2])
	full := encodedJournal(t, base, sampleRecords())
	zeroFilled := bytes.Clone(full)
	clear(zeroFilled[len(full)-20:])
	headerThenZeros := append(bytes.Clone(full[:len(good)+6]), make([]byte, 200)...)
	for name, data := range map[string][]byte{
		"short frame":                    full[:len(good)+7],
		"short payload":                  full[:len(full)-1],
		"zeros":                          append(bytes.Clone(good), make([]byte, 300)...),
		"payload end never reached disk": zeroFilled,
		"header cut, then zero fill":     headerThenZeros,
	} {
		j, err := checkpoint.DecodeJournal(data)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if len(j.Records) != 2 || j.Size != int64(len(good)) || j.Torn != int64(len(data)-len(good)) {
			t.Errorf("%s: %d records, size %d, torn %d; want 2, %d, %d", name, len(j.Records), j.Size, j.Torn, len(good), len(data)-len(good))
		}
	}
}

func TestDecodeJournalRejectsDamage(t *testing.T) {
	base := checkpoint.Sum([]byte("x"))
	full := encodedJournal(t, base, sampleRecords())
	header := bytes.IndexByte(full, '\n') + 1
	middle := bytes.Clone(full)
	middle[header+30] ^= 1
	length := bytes.Clone(full)
	length[header+2] ^= 1
	gap := sampleRecords()
	gap[1].Seq = 5
	badSeal := []checkpoint.Record{{Seq: 1, Seal: "nope"}}
	last := bytes.LastIndex(full, []byte(`{"seq":3`)) - 12 // the last record's frame
	lastPayload := bytes.Clone(full)
	lastPayload[len(full)-3] ^= 1
	lastLength := bytes.Clone(full)
	lastLength[last+1] ^= 1
	lastPayloadCRC := bytes.Clone(full)
	lastPayloadCRC[last+9] ^= 0x40
	cases := map[string][]byte{
		// A complete last record that fails its checksum was acknowledged
		// and then damaged: never mistaken for a torn append.
		"last record payload":      lastPayload,
		"last record length":       lastLength,
		"last record payload crc":  lastPayloadCRC,
		"last record, zeros after": append(bytes.Clone(lastPayload), make([]byte, 64)...),
		"empty":                    nil,
		"no header":                full[header:],
		"header crc":               bytes.Replace(full, []byte(" v2 "), []byte(" v1 "), 1),
		"middle payload":           middle,
		"middle length":            length,
		"sequence gap":             encodedJournal(t, base, gap),
		"seal not a sum":           encodedJournal(t, base, badSeal),
		"snapshot as such":         []byte("sandboxipam-checkpoint v1 sha256=00 len=0\n"),
	}
	for name, data := range cases {
		if _, err := checkpoint.DecodeJournal(data); !errors.Is(err, checkpoint.ErrCorrupt) {
			t.Errorf("%s: err = %v, want ErrCorrupt", name, err)
		}
	}
}

// writeState puts a snapshot and a journal following it in dir.
func writeState(t *testing.T, records []checkpoint.Record) (path string, snap []byte) {
	t.Helper()
	path = filepath.Join(t.TempDir(), "cp")
	snap, err := checkpoint.Encode(sample())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, snap, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(checkpoint.JournalPath(path), encodedJournal(t, checkpoint.Sum(snap), records), 0o600); err != nil {
		t.Fatal(err)
	}
	return path, snap
}

func TestLoad(t *testing.T) {
	path, _ := writeState(t, sampleRecords())
	st, err := checkpoint.Load(path)
	if err != nil || !st.Journal.Present || st.Journal.Records != 3 || len(st.File.Assignments) != 2 {
		t.Fatalf("Load = %+v, %v", st, err)
	}

	// The journal after a snapshot that replaced its base: corrupt.
	other := sample()
	other.SavedAt = other.SavedAt.Add(time.Second)
	data, err := checkpoint.Encode(other)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := checkpoint.Load(path); !errors.Is(err, checkpoint.ErrCorrupt) || !strings.Contains(err.Error(), "follows snapshot") {
		t.Fatalf("journal of another snapshot: %v", err)
	}

	// The same, sealed for that snapshot: a compaction cut short, the
	// journal is stale and not applied.
	sealed := append(sampleRecords(), checkpoint.Record{Seq: 4, Seal: checkpoint.Sum(data)})
	_, snap := writeState(t, sealed)
	if err := os.WriteFile(checkpoint.JournalPath(path), encodedJournal(t, checkpoint.Sum(snap), sealed), 0o600); err != nil {
		t.Fatal(err)
	}
	st, err = checkpoint.Load(path)
	if err != nil || !st.Journal.Stale || !reflect.DeepEqual(st.File, other) {
		t.Fatalf("stale journal: %+v, %v", st.Journal, err)
	}

	// A journal without its snapshot: corrupt, never missing.
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if _, err := checkpoint.Load(path); !errors.Is(err, checkpoint.ErrCorrupt) {
		t.Fatalf("journal alone: %v", err)
	}
	if err := os.Remove(checkpoint.JournalPath(path)); err != nil {
		t.Fatal(err)
	}
	if _, err := checkpoint.Load(path); !errors.Is(err, checkpoint.ErrMissing) {
		t.Fatalf("nothing: %v", err)
	}
}

func TestJournalWriterAppendsAndCutsTornTail(t *testing.T) {
	path, snap := writeState(t, sampleRecords()[:1])
	jpath := checkpoint.JournalPath(path)
	data, err := os.ReadFile(jpath)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(jpath, append(data, 1, 2, 3), 0o600); err != nil {
		t.Fatal(err)
	}
	st, err := checkpoint.Load(path)
	if err != nil || st.Journal.Torn != 3 {
		t.Fatalf("Load = %+v, %v", st.Journal, err)
	}
	w, err := checkpoint.OpenJournal(jpath, st.Journal)
	if err != nil {
		t.Fatal(err)
	}
	if w.Size() != int64(len(data)) {
		t.Fatalf("size after the cut %d, want %d", w.Size(), len(data))
	}
	for _, r := range sampleRecords()[1:] {
		if err := w.Append(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Seal(checkpoint.Sum([]byte("next"))); err != nil {
		t.Fatal(err)
	}
	if err := w.Append(sampleRecords()[0]); err == nil {
		t.Fatal("append after the seal succeeded")
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(jpath)
	if err != nil {
		t.Fatal(err)
	}
	want := encodedJournal(t, checkpoint.Sum(snap), append(sampleRecords(), checkpoint.Record{Seq: 4, Seal: checkpoint.Sum([]byte("next"))}))
	if !bytes.Equal(got, want) {
		t.Fatalf("journal after appends:\n got %q\nwant %q", got, want)
	}

	// A fresh journal replaces it atomically.
	w, err = checkpoint.CreateJournal(jpath, checkpoint.Sum([]byte("next")))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 2 {
		t.Fatalf("directory holds %d entries, want the snapshot and the journal", len(entries))
	}
}

// An append to a journal that was removed under the writer must fail:
// acknowledging it would lose it.
func TestJournalWriterRefusesARemovedFile(t *testing.T) {
	path, snap := writeState(t, nil)
	w, err := checkpoint.CreateJournal(checkpoint.JournalPath(path), checkpoint.Sum(snap))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := os.Remove(checkpoint.JournalPath(path)); err != nil {
		t.Fatal(err)
	}
	if err := w.Append(sampleRecords()[0]); !errors.Is(err, checkpoint.ErrJournalGone) {
		t.Fatalf("append to a removed journal: %v, want ErrJournalGone", err)
	}
}

// The sandboxes whose DEL was answered replay like the rest: set by one
// record, forgotten by a later one, and a record without the optional
// keys leaves them as they were.
func TestJournalReplaysDeletedSandboxes(t *testing.T) {
	at := time.Date(2026, 12, 2, 12, 0, 2, 0, time.UTC)
	done := checkpoint.Deleted{Network: "pods", SandboxID: "done", IfName: "eth0", At: at}
	gone := checkpoint.Deleted{Network: "pods", SandboxID: "gone", IfName: "eth0", At: at}
	records := append(sampleRecords(),
		checkpoint.Record{Seq: 4, Deleted: []checkpoint.Deleted{gone, done}},
		checkpoint.Record{Seq: 5, DropDeleted: []checkpoint.AssignmentKey{{Network: "pods", SandboxID: "gone", IfName: "eth0"}}},
		checkpoint.Record{Seq: 6})
	snap, err := checkpoint.Encode(sample())
	if err != nil {
		t.Fatal(err)
	}
	j, err := checkpoint.DecodeJournal(encodedJournal(t, checkpoint.Sum(snap), records))
	if err != nil {
		t.Fatal(err)
	}
	f, err := checkpoint.Replay(sample(), j.Records)
	if err != nil {
		t.Fatal(err)
	}
	if want := []checkpoint.Deleted{done}; !reflect.DeepEqual(f.Deleted, want) {
		t.Fatalf("deleted after replay %+v, want %+v", f.Deleted, want)
	}
	again, err := checkpoint.Encode(f)
	if err != nil {
		t.Fatal(err)
	}
	back, err := checkpoint.Decode(again)
	if err != nil || !reflect.DeepEqual(back.Deleted, f.Deleted) {
		t.Fatalf("snapshot round trip: %+v, %v", back.Deleted, err)
	}
}
