package host

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
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

// The plugin socket directory has a predictable name in a shared
// directory: one that is not ours, or not a directory, is refused; ours
// made loose is closed again.
func TestCheckPrivateDir(t *testing.T) {
	dir := t.TempDir()
	mine := filepath.Join(dir, "mine")
	if err := os.Mkdir(mine, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(mine, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := checkPrivateDir(mine); err != nil {
		t.Fatalf("own loose directory: %v", err)
	}
	if fi, _ := os.Stat(mine); fi.Mode().Perm() != 0o700 {
		t.Errorf("own loose directory left %v, want 0700", fi.Mode().Perm())
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(mine, link); err != nil {
		t.Fatal(err)
	}
	if err := checkPrivateDir(link); !errors.Is(err, ErrUnsafeSocketDir) {
		t.Errorf("symlink: %v, want ErrUnsafeSocketDir", err)
	}
	if os.Geteuid() != 0 {
		return // only root can give a directory away
	}
	theirs := filepath.Join(dir, "theirs")
	if err := os.Mkdir(theirs, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(theirs, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	if err := checkPrivateDir(theirs); !errors.Is(err, ErrUnsafeSocketDir) || !strings.Contains(err.Error(), "another uid") {
		t.Errorf("another user's directory: %v, want ErrUnsafeSocketDir", err)
	}
}
