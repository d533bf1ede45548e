package testsupport

import (
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"testing"
)

// NetNS makes a network namespace kept alive by a bind mount at path (a
// file in a directory of the test's own, as a runtime keeps a pod's under
// /run/netns) and returns a func that removes it: unmounts it and deletes
// the file, which destroys the namespace. The test's cleanup removes it
// if the test did not. It needs root and unshare(1): callers check with
// RequireRoot(t, "unshare", "umount").
func NetNS(t testing.TB, path string) (remove func()) {
	t.Helper()
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatalf("netns file: %v", err)
	}
	if out, err := exec.Command("unshare", "--net="+path, "true").CombinedOutput(); err != nil {
		_ = os.Remove(path)
		t.Fatalf("unshare --net=%s: %v: %s", path, err, out)
	}
	removed := false
	remove = func() {
		t.Helper()
		if removed {
			return
		}
		removed = true
		if out, err := exec.Command("umount", path).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", path, err, out)
		}
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("remove %s: %v", path, err)
		}
	}
	t.Cleanup(remove)
	return remove
}
