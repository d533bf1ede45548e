package checkpoint

// Reading a journal: decoding and checking its frames (DecodeJournal),
// replaying its records onto the snapshot (Replay), and Load, which does
// both from the files on disk. The format is in journal.go.

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
)

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
		if r.Unproven || len(r.Cursors) > 0 || len(r.Addresses)+len(r.DropAddresses)+len(r.Assignments)+len(r.DropAssignments)+len(r.Deleted)+len(r.DropDeleted) > 0 {
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
	deleted := make(map[AssignmentKey]time.Time, len(f.Deleted))
	for _, d := range f.Deleted {
		deleted[AssignmentKey{d.Network, d.SandboxID, d.IfName}] = d.At
	}
	for _, r := range records {
		if r.Seal != "" {
			continue
		}
		replayDeleted(deleted, r)
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
	f.Deleted = deletedList(deleted)
	if err := validate(f); err != nil {
		return File{}, fmt.Errorf("after replaying the journal: %w", err)
	}
	return f, nil
}

// replayDeleted applies one record's deleted sandboxes onto deleted.
func replayDeleted(deleted map[AssignmentKey]time.Time, r Record) {
	for _, k := range r.DropDeleted {
		delete(deleted, k)
	}
	for _, d := range r.Deleted {
		deleted[AssignmentKey{d.Network, d.SandboxID, d.IfName}] = d.At
	}
}

// deletedList is deleted in key order; nil when empty, as a file without
// the optional key decodes.
func deletedList(deleted map[AssignmentKey]time.Time) []Deleted {
	if len(deleted) == 0 {
		return nil
	}
	out := make([]Deleted, 0, len(deleted))
	for k, at := range deleted {
		out = append(out, Deleted{Network: k.Network, SandboxID: k.SandboxID, IfName: k.IfName, At: at})
	}
	slices.SortFunc(out, func(a, b Deleted) int {
		return cmp.Or(strings.Compare(a.Network, b.Network), strings.Compare(a.SandboxID, b.SandboxID), strings.Compare(a.IfName, b.IfName))
	})
	return out
}

// firstIP is an assignment's first address, or the zero Addr.
func firstIP(a Assignment) netip.Addr {
	if len(a.IPs) == 0 {
		return netip.Addr{}
	}
	return a.IPs[0]
}

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
