package cniinstall

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/containernetworking/cni/libcni"
)

// ErrInvalidConfList: the content given to WriteConfList is not a conflist
// libcni would load. Nothing is written.
var ErrInvalidConfList = errors.New("invalid CNI conflist")

// confExtensions are the names libcni loads from a config directory.
var confExtensions = []string{".conflist", ".conf", ".json"}

// InstallBinary copies the executable src into dstDir under its own base
// name, mode 0755, atomically: a concurrent exec sees the old binary or the
// new one, never a partial one. Renaming over a binary that is running is
// safe (the running process keeps the old inode), where writing into it
// would fail with ETXTBSY.
func InstallBinary(src, dstDir string) error {
	in, err := os.Open(src)
	if err != nil {
		return fmt.Errorf("install binary: %w", err)
	}
	defer in.Close()
	info, err := in.Stat()
	if err != nil {
		return fmt.Errorf("install binary: %w", err)
	}
	if !info.Mode().IsRegular() {
		return fmt.Errorf("install binary: %s is not a regular file", src)
	}
	dst := filepath.Join(dstDir, filepath.Base(src))
	if err := writeAtomic(dst, 0o755, func(w io.Writer) error {
		_, err := io.Copy(w, in)
		return err
	}); err != nil {
		return fmt.Errorf("install binary %s into %s: %w", src, dstDir, err)
	}
	return nil
}

// WriteConfList writes content to path atomically, mode 0644, after
// checking that libcni would load it: a conflist with a name and at least
// one plugin, in a file whose extension libcni reads. A broken conflist in
// the config directory would fail every pod on the node.
func WriteConfList(path string, content []byte) error {
	if err := checkConfList(path, content); err != nil {
		return err
	}
	if err := writeAtomic(path, 0o644, func(w io.Writer) error {
		_, err := w.Write(content)
		return err
	}); err != nil {
		return fmt.Errorf("write conflist %s: %w", path, err)
	}
	return nil
}

// RemoveConfList removes the conflist at path, durably. A conflist that is
// already gone is not an error: the preStop hook may run more than once.
func RemoveConfList(path string) error {
	if err := os.Remove(path); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return fmt.Errorf("remove conflist: %w", err)
	}
	if err := syncDir(filepath.Dir(path)); err != nil {
		return fmt.Errorf("remove conflist %s: %w", path, err)
	}
	return nil
}

func checkConfList(path string, content []byte) error {
	ext := filepath.Ext(path)
	known := false
	for _, e := range confExtensions {
		known = known || ext == e
	}
	if !known {
		return fmt.Errorf("%w: path %q must end in one of %s, or the runtime never loads it",
			ErrInvalidConfList, path, strings.Join(confExtensions, ", "))
	}
	list, err := libcni.ConfListFromBytes(content)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidConfList, err)
	}
	if len(list.Plugins) == 0 {
		return fmt.Errorf("%w: field plugins is empty", ErrInvalidConfList)
	}
	return nil
}

// writeAtomic writes dst through a hidden temporary file in the same
// directory: write, fsync, chmod, rename, fsync the directory. On any
// failure the temporary file is removed and dst is untouched.
func writeAtomic(dst string, mode os.FileMode, write func(io.Writer) error) (err error) {
	dir := filepath.Dir(dst)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(dst)+".*.tmp")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if err := write(tmp); err != nil {
		return err
	}
	// CreateTemp makes the file 0600; chmod on the descriptor so the
	// mode is set before the name becomes visible.
	if err := tmp.Chmod(mode); err != nil {
		return err
	}
	if err := tmp.Sync(); err != nil {
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), dst); err != nil {
		return err
	}
	return syncDir(dir)
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("fsync %s: %w", dir, err)
	}
	return nil
}
