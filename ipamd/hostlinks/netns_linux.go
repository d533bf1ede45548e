package hostlinks

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// nsGetNSType is the NS_GET_NSTYPE ioctl (linux/nsfs.h: _IO(0xb7, 0x3)):
// it answers the CLONE_NEW* type of the namespace an nsfs file is.
const nsGetNSType = 0xb703

// NetNSIdentity opens path (a /run/netns file, /proc/PID/ns/net) and
// returns the identity of the network namespace it is: its nsfs file's
// device and inode, the same through every path to that namespace. An
// absent path is an error wrapping fs.ErrNotExist; a path that is there
// but is no network namespace (the empty file a bind mount leaves when
// unmounted, another namespace type) wraps ErrNotNetNS.
func NetNSIdentity(path string) (dev, ino uint64, err error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return 0, 0, fmt.Errorf("open network namespace %s: %w", path, err)
	}
	defer unix.Close(fd)
	var fs unix.Statfs_t
	if err := unix.Fstatfs(fd, &fs); err != nil {
		return 0, 0, fmt.Errorf("statfs %s: %w", path, err)
	}
	if fs.Type != unix.NSFS_MAGIC {
		return 0, 0, fmt.Errorf("%s: %w: its file system is not nsfs", path, ErrNotNetNS)
	}
	kind, err := unix.IoctlRetInt(fd, nsGetNSType)
	if err != nil {
		return 0, 0, fmt.Errorf("%s: namespace type: %w", path, err)
	}
	if kind != unix.CLONE_NEWNET {
		return 0, 0, fmt.Errorf("%s: %w: it is a namespace of type %#x", path, ErrNotNetNS, kind)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return 0, 0, fmt.Errorf("stat %s: %w", path, err)
	}
	return st.Dev, st.Ino, nil
}
