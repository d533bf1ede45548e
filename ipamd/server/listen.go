package server

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"time"
)

// ErrSocketInUse: another process already serves the socket path.
var ErrSocketInUse = errors.New("socket is served by another process")

// Listen creates the unix socket at path, owner-only (0600). A missing
// parent directory is created 0700. A stale socket left by a crash is
// removed; a live one (something answers) is ErrSocketInUse, and a path
// that is not a socket is never removed.
func Listen(ctx context.Context, path string) (*net.UnixListener, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("socket directory: %w", err)
	}
	if err := removeStale(ctx, path); err != nil {
		return nil, err
	}
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", path, err)
	}
	// The directory is 0700 when ipamd made it, so the moment between
	// bind and chmod exposes nothing there; chmod covers a shared one.
	if err := os.Chmod(path, 0o600); err != nil {
		l.Close()
		return nil, fmt.Errorf("restrict socket %s to its owner: %w", path, err)
	}
	return l, nil
}

func removeStale(ctx context.Context, path string) error {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("stat socket %s: %w", path, err)
	}
	if fi.Mode().Type() != fs.ModeSocket {
		return fmt.Errorf("socket path %s exists and is not a socket; not removing it", path)
	}
	dctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	var d net.Dialer
	if conn, err := d.DialContext(dctx, "unix", path); err == nil {
		conn.Close()
		return fmt.Errorf("%s: %w", path, ErrSocketInUse)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove stale socket %s: %w", path, err)
	}
	return nil
}
