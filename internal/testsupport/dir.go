package testsupport

import (
	"os"
	"path/filepath"
	"testing"
)

// maxSocketDir leaves room under the directory for a socket's name: a unix
// socket path holds at most 107 bytes.
const maxSocketDir = 60

// ShortDir makes a temporary directory short enough for unix sockets under
// it, removed when the test ends. t.TempDir can be too long (it holds the
// test's name), so it lives under os.TempDir, or /tmp when that is long.
func ShortDir(t testing.TB, prefix string) string {
	t.Helper()
	base := os.TempDir()
	if len(base)+len(prefix)+12 > maxSocketDir {
		base = "/tmp"
	}
	dir, err := os.MkdirTemp(base, prefix)
	if err != nil {
		t.Fatalf("short temp dir: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return filepath.Clean(dir)
}
