package plugin

import (
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestSweepRemovesOnlyDeadOldSocketDirs(t *testing.T) {
	parent := t.TempDir()
	now := time.Now()
	old := now.Add(-2 * staleSocketAge)
	makeDir := func(name string, listening bool, modTime time.Time) string {
		t.Helper()
		dir := filepath.Join(parent, name)
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		l, err := net.ListenUnix("unix", &net.UnixAddr{Name: filepath.Join(dir, "plugin1"), Net: "unix"})
		if err != nil {
			t.Fatal(err)
		}
		if listening {
			t.Cleanup(func() { l.Close() })
		} else {
			l.SetUnlinkOnClose(false) // a killed plugin leaves its socket file
			l.Close()
		}
		if err := os.Chtimes(dir, modTime, modTime); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	dead := makeDir("plugin-dir1", false, old)
	live := makeDir("plugin-dir2", true, old)
	young := makeDir("plugin-dir3", false, now)
	other := makeDir("not-ours", false, old)

	sweepStaleSockets(parent, now)
	if _, err := os.Stat(dead); !os.IsNotExist(err) {
		t.Errorf("dead socket directory %s kept", dead)
	}
	for _, kept := range []string{live, young, other} {
		if _, err := os.Stat(kept); err != nil {
			t.Errorf("%s removed: %v", kept, err)
		}
	}
}
