package checkpoint

// The journal makes a change durable with one small append and one
// fdatasync instead of a rewrite of the whole snapshot with two fsyncs.
//
// It lives next to the snapshot, at <path>.journal:
//
//	sandboxipam-journal v2 base=<sha256 hex of the snapshot file> crc=<crc32c hex of the text before " crc=">
//	record, record, ...
//
// and each record is framed as
//
//	uint32 length | uint32 CRC32C(length) | uint32 CRC32C(payload) | payload
//
// (little endian), the payload being one JSON Record: the absolute state
// of every address and assignment a group commit changed, so replaying
// records in order onto the snapshot they follow rebuilds the state.
//
// The base ties a journal to one snapshot: a journal is only ever applied
// to the exact bytes it was started after, so a journal that meets another
// snapshot is refused as corrupt instead of being applied to the wrong
// state. Compaction writes a new snapshot and then a fresh journal; a crash
// between the two leaves the new snapshot with the old journal. To tell
// that apart from damage, compaction first appends a seal record naming
// the new snapshot's checksum to the old journal: an old journal whose last
// record seals the snapshot on disk is wholly contained in it (stale), and
// is dropped, never applied twice.
//
// The length has its own checksum, so a damaged length is never trusted
// to skip over records. A record that fails its checks is a torn tail (the
// unacknowledged append a crash cut short: the writer appends one record at
// a time and acknowledges it only after fdatasync) when no valid record
// follows it; when one does, the journal is corrupt in the middle, and the
// caller must treat the state as lost. A last record that is complete (its
// length is intact and every byte it claims is in the file) but fails its
// checksum is damage too, not a tear: see tornTail.

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"net/netip"
	"strconv"
)

// JournalVersion is the journal format version this package writes; it
// reads it and every version back to OldestVersion (v1 records are
// upgraded as they are read, see v1.go).
const JournalVersion = 2

const journalMagic = "sandboxipam-journal"

// frameLen is the record frame's fixed part: length, its CRC, payload CRC.
const frameLen = 12

// maxRecord bounds one record's payload: a damaged length never makes the
// decoder allocate without limit. A record holds one group commit's
// changes; a commit as large as the whole state is written as a snapshot.
const maxRecord = 64 << 20

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// ErrJournalGone: the journal file was removed or replaced while open, so
// what is appended to it would never be read back.
var ErrJournalGone = errors.New("journal file is no longer at its path")

// AssignmentKey identifies an assignment in a journal record.
type AssignmentKey struct {
	Network   string `json:"network"`
	SandboxID string `json:"sandboxID"`
	IfName    string `json:"ifName"`
}

// Record is one group commit: the state, after the commit, of everything
// it changed. Replaying it sets those entries, whatever they were, so
// records are applied in order, each exactly once (see Seq).
type Record struct {
	// Seq numbers the journal's records from 1 without gaps, so a lost,
	// repeated or reordered record is detected.
	Seq uint64 `json:"seq"`
	// Seal, when set, is the checksum of the snapshot this journal was
	// compacted into; the record carries no changes.
	Seal string `json:"seal,omitempty"`
	// Unproven and Cursor are the state's, as in File.
	Unproven bool         `json:"unproven,omitempty"`
	Cursors  []netip.Addr `json:"cursors,omitempty"`
	// Addresses are set, DropAddresses are no longer recorded.
	Addresses     []Address    `json:"addresses,omitempty"`
	DropAddresses []netip.Addr `json:"dropAddresses,omitempty"`
	// Assignments are set, DropAssignments are released.
	Assignments     []Assignment    `json:"assignments,omitempty"`
	DropAssignments []AssignmentKey `json:"dropAssignments,omitempty"`
	// Deleted are set, DropDeleted forgotten (see File.Deleted).
	// Optional: a journal without them replays as before.
	Deleted     []Deleted       `json:"deleted,omitempty"`
	DropDeleted []AssignmentKey `json:"dropDeleted,omitempty"`
}

// Journal is a decoded journal file.
type Journal struct {
	// Version is the file's format version.
	Version int
	// Base is the checksum of the snapshot the records follow.
	Base    string
	Records []Record
	// Size is where the last valid record ends; Torn counts the bytes
	// after it that were a torn, never acknowledged append.
	Size int64
	Torn int64
}

// Sum is the checksum a journal's base and a seal name a snapshot by: the
// SHA-256 of the whole snapshot file.
func Sum(snapshot []byte) string {
	s := sha256.Sum256(snapshot)
	return hex.EncodeToString(s[:])
}

// journalHeader renders the header line for a journal following base.
func journalHeader(base string) []byte {
	text := journalMagic + " v" + strconv.Itoa(JournalVersion) + " base=" + base
	crc := crc32.Checksum([]byte(text), castagnoli)
	return fmt.Appendf(nil, "%s crc=%08x\n", text, crc)
}

// appendRecord frames r's payload onto b.
func appendRecord(b []byte, r Record) ([]byte, error) {
	if err := checkRecordYears(r); err != nil {
		return nil, fmt.Errorf("encode journal record: %w", err)
	}
	payload, err := json.Marshal(r)
	if err != nil {
		return nil, fmt.Errorf("encode journal record: %w", err)
	}
	if len(payload) > maxRecord {
		return nil, fmt.Errorf("encode journal record: %d bytes, over the %d limit", len(payload), maxRecord)
	}
	var lenBuf [4]byte
	binary.LittleEndian.PutUint32(lenBuf[:], uint32(len(payload)))
	b = append(b, lenBuf[:]...)
	b = binary.LittleEndian.AppendUint32(b, crc32.Checksum(lenBuf[:], castagnoli))
	b = binary.LittleEndian.AppendUint32(b, crc32.Checksum(payload, castagnoli))
	return append(b, payload...), nil
}

func checkRecordYears(r Record) error {
	var err error
	for _, a := range r.Addresses {
		err = errors.Join(err, checkYear(a.ReleasedAt))
	}
	for _, a := range r.Assignments {
		err = errors.Join(err, checkYear(a.AssignedAt), checkYear(a.ListedAt))
	}
	for _, d := range r.Deleted {
		err = errors.Join(err, checkYear(d.At))
	}
	return err
}

// JournalPath is where the journal of the snapshot at path lives.
func JournalPath(path string) string { return path + ".journal" }
