package checkpoint

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// ErrMissing: there is no checkpoint file (a first start).
var ErrMissing = errors.New("checkpoint missing")

// Read loads and verifies the checkpoint at path. A missing file wraps
// ErrMissing; a damaged one wraps ErrCorrupt; anything else (permissions,
// I/O) is returned as is, and callers should treat it as unreadable, never
// as missing.
func Read(path string) (File, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return File{}, fmt.Errorf("read %s: %w", path, ErrMissing)
	}
	if err != nil {
		return File{}, fmt.Errorf("read checkpoint: %w", err)
	}
	f, err := Decode(data)
	if err != nil {
		return File{}, fmt.Errorf("read %s: %w", path, err)
	}
	return f, nil
}

// WriteAtomic replaces path with data so that a crash at any point leaves
// either the old file or the new one, never a mix: write a temporary file
// in the same directory, fsync it, rename it over path, fsync the directory
// so the rename itself is durable.
func WriteAtomic(path string, data []byte) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("write checkpoint %s: %w", path, withoutTempName(err))
	}
	tmpName := tmp.Name()
	if err := writeAndSync(tmp, data); err != nil {
		_ = os.Remove(tmpName)
		return fmt.Errorf("write checkpoint %s: %w", path, withoutTempName(err))
	}
	if err := os.Rename(tmpName, path); err != nil {
		_ = os.Remove(tmpName)
		return fmt.Errorf("write checkpoint %s: %w", path, withoutTempName(err))
	}
	if err := syncDir(dir); err != nil {
		return fmt.Errorf("write checkpoint %s: %w", path, err)
	}
	return nil
}

// withoutTempName drops the path of a failed file operation, the name of
// a temporary file that is removed on failure: the caller names the real
// file instead, the one an operator can look for. The cause (ENOSPC,
// EROFS, ...) is kept for errors.Is.
func withoutTempName(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return fmt.Errorf("%s: %w", pe.Op, pe.Err)
	}
	var le *os.LinkError
	if errors.As(err, &le) {
		return fmt.Errorf("%s: %w", le.Op, le.Err)
	}
	return err
}

// writeAndSync writes data, fsyncs and closes f; it closes f on every path.
func writeAndSync(f *os.File, data []byte) error {
	if _, err := f.Write(data); err != nil {
		_ = f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

// syncDir fsyncs a directory so a rename inside it survives a crash.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	if err := d.Sync(); err != nil {
		_ = d.Close()
		return fmt.Errorf("fsync %s: %w", dir, err)
	}
	return d.Close()
}
