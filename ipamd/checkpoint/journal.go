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
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
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
	return err
}

// DecodeJournal verifies and parses a journal. A torn last record (the
// file ends inside it) is dropped and counted in Torn; every other
// failure, a complete last record that fails its checksum included, wraps
// ErrCorrupt.
func DecodeJournal(data []byte) (Journal, error) {
	line, _, ok := bytes.Cut(data, []byte("\n"))
	if !ok {
		return Journal{}, fmt.Errorf("%w: journal has no header line", ErrCorrupt)
	}
	version, base, err := checkJournalHeader(string(line))
	if err != nil {
		return Journal{}, err
	}
	j := Journal{Version: version, Base: base}
	off := len(line) + 1
	for off < len(data) {
		payload, next, ok := frameAt(data, off)
		if !ok {
			if validRecordAfter(data, off+1) {
				return Journal{}, fmt.Errorf("%w: journal record at byte %d is damaged and valid records follow it", ErrCorrupt, off)
			}
			if !tornTail(data[off:]) {
				return Journal{}, fmt.Errorf("%w: the last journal record (at byte %d, %d bytes) is complete but fails its checksum: an acknowledged change was damaged", ErrCorrupt, off, len(data)-off)
			}
			j.Torn = int64(len(data) - off)
			break
		}
		r, err := decodeRecord(version, payload)
		if err != nil {
			return Journal{}, fmt.Errorf("%w: journal record at byte %d: %v", ErrCorrupt, off, err)
		}
		if want := uint64(len(j.Records)) + 1; r.Seq != want {
			return Journal{}, fmt.Errorf("%w: journal record at byte %d has sequence %d, want %d", ErrCorrupt, off, r.Seq, want)
		}
		if err := checkRecord(r); err != nil {
			return Journal{}, fmt.Errorf("%w: journal record %d: %v", ErrCorrupt, r.Seq, err)
		}
		j.Records = append(j.Records, r)
		off = next
	}
	j.Size = int64(len(data)) - j.Torn
	return j, nil
}

// frameAt checks the record framed at off and returns its payload and
// where the next record starts.
func frameAt(data []byte, off int) (payload []byte, next int, ok bool) {
	if len(data)-off < frameLen {
		return nil, 0, false
	}
	lenBytes := data[off : off+4]
	if binary.LittleEndian.Uint32(data[off+4:]) != crc32.Checksum(lenBytes, castagnoli) {
		return nil, 0, false
	}
	n := int(binary.LittleEndian.Uint32(lenBytes))
	if n > maxRecord || n > len(data)-off-frameLen {
		return nil, 0, false
	}
	payload = data[off+frameLen : off+frameLen+n]
	if binary.LittleEndian.Uint32(data[off+8:]) != crc32.Checksum(payload, castagnoli) {
		return nil, 0, false
	}
	return payload, off + frameLen + n, true
}

// tornTail reports whether tail, the bytes from the first bad frame to
// the end of the file, is an append a crash cut short rather than a
// complete record that was damaged afterwards. Only the first was never
// acknowledged: the writer appends a record in one write and answers only
// after fdatasync, so a crash leaves a prefix of the record, possibly
// followed by zeros where the file grew but its data never reached the
// disk. A record whose every byte is there and that still fails its
// checksum was acknowledged and then damaged: that is corruption, never
// a tail to cut off. JSON payloads hold no NUL byte, so zero fill is told
// from content.
func tornTail(tail []byte) bool {
	content := bytes.TrimRight(tail, "\x00")
	if len(content) < frameLen {
		// The file ends (or its zero fill starts) inside the frame header.
		return true
	}
	lenBytes := content[:4]
	if binary.LittleEndian.Uint32(content[4:8]) != crc32.Checksum(lenBytes, castagnoli) {
		// A torn append keeps its first bytes intact: a bad length with
		// its checksum present is damage.
		return false
	}
	n := int(binary.LittleEndian.Uint32(lenBytes))
	// Torn when the file, or its content before the zero fill, ends inside
	// the payload; complete otherwise.
	return n <= maxRecord && len(content) < frameLen+n
}

// validRecordAfter reports whether a valid record starts anywhere from
// off on: then a bad record before it is damage, not a torn tail.
func validRecordAfter(data []byte, off int) bool {
	for ; off+frameLen <= len(data); off++ {
		if _, _, ok := frameAt(data, off); ok {
			return true
		}
	}
	return false
}

func checkJournalHeader(line string) (int, string, error) {
	text, crcText, ok := strings.Cut(line, " crc=")
	if !ok || len(crcText) != 8 {
		return 0, "", fmt.Errorf("%w: journal header %.80q lacks its crc", ErrCorrupt, line)
	}
	crc, err := strconv.ParseUint(crcText, 16, 32)
	if err != nil || uint32(crc) != crc32.Checksum([]byte(text), castagnoli) {
		return 0, "", fmt.Errorf("%w: journal header %.80q fails its crc", ErrCorrupt, line)
	}
	fields := strings.Fields(text)
	if len(fields) != 3 || fields[0] != journalMagic {
		return 0, "", fmt.Errorf("%w: header %.80q is not a sandboxipam journal header", ErrCorrupt, line)
	}
	version, err := checkVersion("journal", fields[1], JournalVersion)
	if err != nil {
		return 0, "", err
	}
	base, ok := strings.CutPrefix(fields[2], "base=")
	if !ok || !isSum(base) {
		return 0, "", fmt.Errorf("%w: journal header %.80q lacks base=", ErrCorrupt, line)
	}
	return version, base, nil
}

func isSum(s string) bool {
	if len(s) != 64 {
		return false
	}
	_, err := hex.DecodeString(s)
	return err == nil
}

// checkRecord rejects a record the writer cannot have produced.
func checkRecord(r Record) error {
	if r.Seal != "" {
		if !isSum(r.Seal) {
			return errors.New("seal is not a sha256")
		}
		if r.Unproven || len(r.Cursors) > 0 || len(r.Addresses)+len(r.DropAddresses)+len(r.Assignments)+len(r.DropAssignments) > 0 {
			return errors.New("a seal carries changes")
		}
	}
	for _, a := range r.Addresses {
		if !a.IP.IsValid() {
			return errors.New("invalid address")
		}
	}
	for _, ip := range r.DropAddresses {
		if !ip.IsValid() {
			return errors.New("invalid dropped address")
		}
	}
	return nil
}

// Replay applies records in order onto f and checks that the result is a
// state the datastore could have written. Seals carry no changes.
func Replay(f File, records []Record) (File, error) {
	addrs := make(map[netip.Addr]Address, len(f.Addresses))
	for _, a := range f.Addresses {
		addrs[a.IP] = a
	}
	assigns := make(map[AssignmentKey]Assignment, len(f.Assignments))
	for _, a := range f.Assignments {
		assigns[AssignmentKey{a.Network, a.SandboxID, a.IfName}] = a
	}
	for _, r := range records {
		if r.Seal != "" {
			continue
		}
		f.Unproven = r.Unproven
		if len(r.Cursors) > 0 {
			f.Cursors = r.Cursors
		}
		for _, ip := range r.DropAddresses {
			delete(addrs, ip)
		}
		for _, a := range r.Addresses {
			addrs[a.IP] = a
		}
		for _, k := range r.DropAssignments {
			delete(assigns, k)
		}
		for _, a := range r.Assignments {
			assigns[AssignmentKey{a.Network, a.SandboxID, a.IfName}] = a
		}
	}
	f.Addresses = make([]Address, 0, len(addrs))
	for _, a := range addrs {
		f.Addresses = append(f.Addresses, a)
	}
	slices.SortFunc(f.Addresses, func(a, b Address) int { return a.IP.Compare(b.IP) })
	f.Assignments = make([]Assignment, 0, len(assigns))
	for _, a := range assigns {
		f.Assignments = append(f.Assignments, a)
	}
	slices.SortFunc(f.Assignments, func(a, b Assignment) int { return firstIP(a).Compare(firstIP(b)) })
	if err := validate(f); err != nil {
		return File{}, fmt.Errorf("after replaying the journal: %w", err)
	}
	return f, nil
}

// JournalPath is where the journal of the snapshot at path lives.
// firstIP is an assignment's first address, or the zero Addr.
func firstIP(a Assignment) netip.Addr {
	if len(a.IPs) == 0 {
		return netip.Addr{}
	}
	return a.IPs[0]
}

func JournalPath(path string) string { return path + ".journal" }

// JournalState says what Load found in the journal.
type JournalState struct {
	// Present: there is a journal file.
	Present bool
	// Stale: its last record seals the snapshot on disk, so the
	// snapshot already holds every record; it was not applied and must
	// be replaced by a fresh journal.
	Stale bool
	// Records counts the records applied, seals included.
	Records int
	// Size is where the last valid record ends; Torn counts the bytes
	// of a torn tail after it, to be truncated before appending.
	Size int64
	Torn int64
	// Sealed: the last record is a seal of a snapshot that never
	// landed; the journal takes no more appends, the next write must
	// compact.
	Sealed bool
}

// State is the datastore state Load found: the snapshot with its journal
// applied.
type State struct {
	File File
	// Sum is the snapshot file's checksum, the base of its journal.
	Sum     string
	Journal JournalState
	// Old: the snapshot or the journal is of an older format version
	// than this build writes. The next write must compact: a record of
	// the new version is never appended to an old journal.
	Old bool
}

// Load reads the snapshot at path and replays its journal. With neither
// file it wraps ErrMissing. A damaged snapshot, a journal damaged before
// its last record, a journal without its snapshot or following another
// snapshot wrap ErrCorrupt; other errors (permissions, I/O) are returned
// as they are, and callers should treat them as unreadable, never as
// missing.
func Load(path string) (State, error) {
	snap, snapErr := os.ReadFile(path)
	jdata, jErr := os.ReadFile(JournalPath(path))
	snapMissing, jMissing := errors.Is(snapErr, fs.ErrNotExist), errors.Is(jErr, fs.ErrNotExist)
	switch {
	case snapMissing && jMissing:
		return State{}, fmt.Errorf("read %s: %w", path, ErrMissing)
	case snapMissing:
		return State{}, fmt.Errorf("read %s: %w: the snapshot is missing but its journal is there", path, ErrCorrupt)
	case snapErr != nil:
		return State{}, fmt.Errorf("read checkpoint: %w", snapErr)
	case jErr != nil && !jMissing:
		return State{}, fmt.Errorf("read checkpoint journal: %w", jErr)
	}
	f, version, err := decode(snap)
	if err != nil {
		return State{}, fmt.Errorf("read %s: %w", path, err)
	}
	st := State{File: f, Sum: Sum(snap), Old: version < Version}
	if jMissing {
		// No journal: a store from before the journal, or a crash
		// between the first snapshot and its journal.
		return st, nil
	}
	j, err := DecodeJournal(jdata)
	if err != nil {
		return State{}, fmt.Errorf("read %s: %w", JournalPath(path), err)
	}
	st.Journal = JournalState{Present: true, Records: len(j.Records), Size: j.Size, Torn: j.Torn}
	st.Old = st.Old || j.Version < JournalVersion
	var last Record
	if len(j.Records) > 0 {
		last = j.Records[len(j.Records)-1]
	}
	if last.Seal == st.Sum {
		st.Journal.Stale = true
		return st, nil
	}
	if j.Base != st.Sum {
		return State{}, fmt.Errorf("read %s: %w: the journal follows snapshot %.12s, the snapshot on disk is %.12s", JournalPath(path), ErrCorrupt, j.Base, st.Sum)
	}
	st.Journal.Sealed = last.Seal != ""
	if st.File, err = Replay(f, j.Records); err != nil {
		return State{}, fmt.Errorf("read %s: %w", JournalPath(path), err)
	}
	return st, nil
}

// JournalWriter appends records to a journal file. It is not safe for
// concurrent use: the datastore's single writer goroutine owns it.
type JournalWriter struct {
	f    *os.File
	path string
	size int64
	seq  uint64 // the last record's
	// broken: an append failed and the file could not be cut back to
	// its last good record.
	broken bool
	sealed bool
}

// CreateJournal atomically replaces the journal at path with an empty one
// following the snapshot whose checksum is base: temp file, fsync, rename,
// fsync the directory, so that every later append needs only fdatasync.
func CreateJournal(path, base string) (*JournalWriter, error) {
	header := journalHeader(base)
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, filepath.Base(path)+".tmp-*")
	if err != nil {
		return nil, fmt.Errorf("create journal %s: %w", path, withoutTempName(err))
	}
	tmpName := tmp.Name()
	fail := func(err error) (*JournalWriter, error) {
		_ = tmp.Close()
		_ = os.Remove(tmpName)
		return nil, fmt.Errorf("create journal %s: %w", path, withoutTempName(err))
	}
	if _, err := tmp.Write(header); err != nil {
		return fail(err)
	}
	if err := tmp.Sync(); err != nil {
		return fail(err)
	}
	if err := os.Rename(tmpName, path); err != nil {
		return fail(err)
	}
	if err := syncDir(dir); err != nil {
		_ = tmp.Close()
		return nil, fmt.Errorf("create journal: %w", err)
	}
	return &JournalWriter{f: tmp, path: path, size: int64(len(header))}, nil
}

// OpenJournal opens the journal Load found, cutting off a torn tail first,
// to append after its last record.
func OpenJournal(path string, st JournalState) (*JournalWriter, error) {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return nil, fmt.Errorf("open journal: %w", err)
	}
	j := &JournalWriter{f: f, path: path, size: st.Size, seq: uint64(st.Records), sealed: st.Sealed}
	if st.Torn > 0 {
		if err := j.cut(); err != nil {
			_ = f.Close()
			return nil, fmt.Errorf("open journal: cut its torn tail: %w", err)
		}
	}
	return j, nil
}

// Size is the journal's length in bytes.
func (j *JournalWriter) Size() int64 { return j.size }

// Sealed reports whether the journal takes no more records.
func (j *JournalWriter) Sealed() bool { return j.sealed }

// Append writes r as the next record and fdatasyncs: when it returns nil
// the record is durable. A failed append is cut off again so the journal
// stays a run of valid records.
func (j *JournalWriter) Append(r Record) error {
	if j.sealed {
		return errors.New("append to journal: it is sealed")
	}
	return j.append(r)
}

func (j *JournalWriter) append(r Record) error {
	if j.broken {
		if err := j.cut(); err != nil {
			return fmt.Errorf("append to journal %s: an earlier append could not be cut off: %w", j.path, withoutTempName(err))
		}
	}
	r.Seq = j.seq + 1
	buf, err := appendRecord(nil, r)
	if err != nil {
		return err
	}
	if _, err := j.f.WriteAt(buf, j.size); err != nil {
		j.cutAfterFailure()
		return fmt.Errorf("append to journal %s: %w", j.path, withoutTempName(err))
	}
	if err := fdatasync(j.f); err != nil {
		j.cutAfterFailure()
		return fmt.Errorf("append to journal %s: fdatasync: %w", j.path, withoutTempName(err))
	}
	if err := j.linked(); err != nil {
		j.cutAfterFailure()
		return fmt.Errorf("append to journal %s: %w", j.path, err)
	}
	j.size += int64(len(buf))
	j.seq = r.Seq
	return nil
}

// linked checks that the open file is still the journal at its path: a
// record appended to a removed file would be acknowledged and lost.
func (j *JournalWriter) linked() error {
	info, err := j.f.Stat()
	if err != nil {
		return err
	}
	if nlink(info) == 0 {
		return fmt.Errorf("%s: %w", j.path, ErrJournalGone)
	}
	return nil
}

func (j *JournalWriter) cutAfterFailure() {
	j.broken = true
	if j.cut() == nil {
		j.broken = false
	}
}

// cut truncates the file to its last good record, durably.
func (j *JournalWriter) cut() error {
	if err := j.f.Truncate(j.size); err != nil {
		return err
	}
	if err := j.f.Sync(); err != nil {
		return err
	}
	j.broken = false
	return nil
}

// Seal appends a seal naming the snapshot (by Sum) that is about to replace
// this journal's base, and takes no more records. Call it before that
// snapshot is renamed into place: a crash between the snapshot and the
// fresh journal then leaves a journal that says it is contained in the
// snapshot, not one that looks like damage. A journal no longer at its
// path needs no seal: nothing of it is left to be misread.
func (j *JournalWriter) Seal(sum string) error {
	if err := j.linked(); errors.Is(err, ErrJournalGone) {
		j.sealed = true
		return nil
	}
	if err := j.append(Record{Seal: sum}); err != nil {
		return fmt.Errorf("seal journal: %w", err)
	}
	j.sealed = true
	return nil
}

// Close closes the file.
func (j *JournalWriter) Close() error { return j.f.Close() }
