// Package endpoint parses runtime socket URIs, dials them, and tells what
// kind of server answers on a socket, so that an adapter pointed at the
// wrong runtime can say which runtime it found instead of reporting a
// generic connection failure.
package endpoint

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

const unixScheme = "unix://"

// SocketPath returns the file system path of a unix socket endpoint. It
// accepts "unix:///abs/path" and, as CRI tools do, a bare absolute path.
func SocketPath(uri string) (string, error) {
	path, hasScheme := strings.CutPrefix(uri, unixScheme)
	if !hasScheme && strings.Contains(uri, "://") {
		return "", fmt.Errorf("endpoint %q: only unix:// sockets are supported", uri)
	}
	if path == "" {
		return "", fmt.Errorf("endpoint %q: empty socket path", uri)
	}
	if !filepath.IsAbs(path) {
		return "", fmt.Errorf("endpoint %q: socket path must be absolute", uri)
	}
	return filepath.Clean(path), nil
}

// Normalize returns uri in its "unix:///abs/path" form.
func Normalize(uri string) (string, error) {
	path, err := SocketPath(uri)
	if err != nil {
		return "", err
	}
	return unixScheme + path, nil
}

// Dial connects to the unix socket behind uri.
func Dial(ctx context.Context, uri string) (net.Conn, error) {
	path, err := SocketPath(uri)
	if err != nil {
		return nil, err
	}
	var dialer net.Dialer
	return dialer.DialContext(ctx, "unix", path)
}

// IsAbsent reports whether a dial error means that nothing listens on the
// socket: the file is missing, or it is stale and refuses connections.
func IsAbsent(err error) bool {
	return errors.Is(err, os.ErrNotExist) || errors.Is(err, syscall.ENOENT) ||
		errors.Is(err, syscall.ECONNREFUSED)
}
