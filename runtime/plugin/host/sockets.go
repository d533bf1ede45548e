package host

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// staleSocketAge is how old a socket directory must be before a sweep may
// remove it: younger ones may belong to a launch still in progress.
const staleSocketAge = time.Minute

// socketParent is where go-plugin makes each plugin's socket directory: a
// directory of our own, so that the directories of hosts that died
// without closing their plugins can be found and removed.
//
// Its name in the shared temporary directory is predictable, so another
// user could make it first: whoever owns it could swap a plugin's socket
// for one of their own, and without AutoMTLS the host would take that
// impostor's listings for the runtime's. It is used only when it is a
// real directory owned by this process's uid and closed to everyone else.
func socketParent() (string, error) {
	dir := filepath.Join(os.TempDir(), fmt.Sprintf("sandboxipam-plugins-%d", os.Getuid()))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("plugin socket directory: %w", err)
	}
	if err := checkPrivateDir(dir); err != nil {
		return "", fmt.Errorf("plugin socket directory: %w", err)
	}
	return dir, nil
}

// ErrUnsafeSocketDir: the plugin socket directory is not this process's
// own private directory.
var ErrUnsafeSocketDir = errors.New("not a private directory of this user")

func checkPrivateDir(dir string) error {
	fi, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	switch {
	case !fi.IsDir():
		return fmt.Errorf("%s is %v, %w", dir, fi.Mode().Type(), ErrUnsafeSocketDir)
	case !ok || int(st.Uid) != os.Geteuid():
		return fmt.Errorf("%s belongs to another uid, %w", dir, ErrUnsafeSocketDir)
	case fi.Mode().Perm()&0o077 != 0:
		// Ours, made loose by someone with our rights: close it again.
		if err := os.Chmod(dir, 0o700); err != nil {
			return fmt.Errorf("%s has mode %v and cannot be closed: %w", dir, fi.Mode().Perm(), err)
		}
	}
	return nil
}

// sweepStaleSockets removes the socket directories under parent that no
// plugin listens in any more: those of a host killed before it could
// close its plugins (the kernel then kills the plugins with SIGKILL, so
// neither side cleans up).
func sweepStaleSockets(parent string, now time.Time) {
	entries, err := os.ReadDir(parent)
	if err != nil {
		return
	}
	for _, entry := range entries {
		info, err := entry.Info()
		if err != nil || !entry.IsDir() || !strings.HasPrefix(entry.Name(), "plugin-dir") || now.Sub(info.ModTime()) < staleSocketAge {
			continue
		}
		dir := filepath.Join(parent, entry.Name())
		if !anyoneListens(dir) {
			_ = os.RemoveAll(dir)
		}
	}
}

// anyoneListens reports whether a process accepts connections on a socket
// in dir. When unsure, it says yes.
func anyoneListens(dir string) bool {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return true
	}
	for _, entry := range entries {
		if entry.Type()&os.ModeSocket == 0 {
			continue
		}
		conn, err := net.Dial("unix", filepath.Join(dir, entry.Name()))
		if err == nil {
			conn.Close()
			return true
		}
		if !errors.Is(err, syscall.ECONNREFUSED) && !errors.Is(err, syscall.ENOENT) {
			return true
		}
	}
	return false
}
