package host

import "syscall"

// dieWithHost has the kernel SIGKILL the plugin when the host dies, even by
// SIGKILL, so that no plugin outlives its host. (The kernel ties the signal
// to the thread that started the plugin; process.Start picks a thread that
// lives as long as the host.)
//
// The plugin also leads its own process group, so that Kill ends whatever
// it started too.
func dieWithHost() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
}
