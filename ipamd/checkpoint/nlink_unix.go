//go:build unix

package checkpoint

import (
	"io/fs"
	"syscall"
)

// nlink is the file's link count: 0 once it was removed from its directory.
func nlink(info fs.FileInfo) uint64 {
	if st, ok := info.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Nlink)
	}
	return 1
}
