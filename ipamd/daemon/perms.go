package daemon

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// ErrUnsafeDir: a directory ipamd keeps its state or sockets in can be
// written by someone other than root and ipamd's uid.
var ErrUnsafeDir = errors.New("directory is writable by others than root and ipamd")

// checkDirs refuses to start when a directory of ipamd's state or sockets
// is open to other users: whoever can write the state directory can swap
// the checkpoint ipamd trusts at its next start, and whoever can write a
// socket directory can put a socket of their own where the CNI plugin or
// ipamctl connects. Missing directories are made 0700. Read and search
// permission for others (a hostPath's 0755) is fine: the sockets
// themselves are 0600 and the checkpoint files 0600.
func (d *Daemon) checkDirs() error {
	dirs := []struct{ field, dir string }{
		{"stateDir", filepath.Dir(d.cfg.CheckpointPath())},
		{"socket", filepath.Dir(d.cfg.Socket)},
		{"introspection.adminSocket", filepath.Dir(d.cfg.AdminSocketPath())},
	}
	for _, c := range dirs {
		if err := privateDir(c.dir); err != nil {
			return fmt.Errorf("%s: %w", c.field, err)
		}
	}
	return nil
}

func privateDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("directory %s: %w", dir, err)
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("directory %s: %w", dir, err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s is not a directory: %w", dir, fs.ErrInvalid)
	}
	if fi.Mode().Perm()&0o022 != 0 {
		return fmt.Errorf("%s has mode %v: %w; make it 0755 or stricter", dir, fi.Mode().Perm(), ErrUnsafeDir)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Uid != 0 && int(st.Uid) != os.Geteuid() {
		return fmt.Errorf("%s belongs to uid %d: %w", dir, st.Uid, ErrUnsafeDir)
	}
	return nil
}
