package checkpoint

// Writing a journal: JournalWriter appends one record per group commit
// and fdatasyncs it, and seals the journal before compaction. The format
// is in journal.go.

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

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
