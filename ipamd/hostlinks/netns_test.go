package hostlinks_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/sandboxipam/sandboxipam/internal/testsupport"
	"github.com/sandboxipam/sandboxipam/ipamd/hostlinks"
	"golang.org/x/sys/unix"
)

// A network namespace is identified by its nsfs inode, the same through
// its bind mount and through /proc/PID/ns/net; a path that is absent, an
// empty file left by an unmount, or another namespace type is not one.
func TestNetNSIdentity(t *testing.T) {
	testsupport.RequireRoot(t, "unshare", "umount")
	dir := t.TempDir()
	pod := filepath.Join(dir, "pod")
	remove := testsupport.NetNS(t, pod)
	dev, ino, err := hostlinks.NetNSIdentity(pod)
	if err != nil || dev == 0 || ino == 0 {
		t.Fatalf("NetNSIdentity(%s) = %d, %d, %v", pod, dev, ino, err)
	}
	var st unix.Stat_t
	if err := unix.Stat(pod, &st); err != nil || st.Dev != dev || st.Ino != ino {
		t.Fatalf("stat %s = dev %d ino %d, %v; want %d %d", pod, st.Dev, st.Ino, err, dev, ino)
	}
	selfDev, selfIno, err := hostlinks.NetNSIdentity("/proc/self/ns/net")
	if err != nil || selfDev != dev || selfIno == ino {
		t.Fatalf("NetNSIdentity(/proc/self/ns/net) = %d, %d, %v; want the same nsfs device %d, another inode than %d", selfDev, selfIno, err, dev, ino)
	}
	if _, _, err := hostlinks.NetNSIdentity("/proc/self/ns/mnt"); !errors.Is(err, hostlinks.ErrNotNetNS) {
		t.Errorf("NetNSIdentity(/proc/self/ns/mnt) = %v; want ErrNotNetNS", err)
	}
	remove()
	if _, _, err := hostlinks.NetNSIdentity(pod); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("NetNSIdentity of a removed namespace = %v; want fs.ErrNotExist", err)
	}
	if err := os.WriteFile(pod, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := hostlinks.NetNSIdentity(pod); !errors.Is(err, hostlinks.ErrNotNetNS) {
		t.Errorf("NetNSIdentity of a plain file = %v; want ErrNotNetNS", err)
	}
}

// What identifying the namespace adds to every ADD: one open, fstatfs,
// ioctl, fstat and close.
func BenchmarkNetNSIdentity(b *testing.B) {
	if _, _, err := hostlinks.NetNSIdentity("/proc/self/ns/net"); err != nil {
		b.Skipf("no network namespace to open here: %v", err)
	}
	for b.Loop() {
		if _, _, err := hostlinks.NetNSIdentity("/proc/self/ns/net"); err != nil {
			b.Fatal(err)
		}
	}
}
