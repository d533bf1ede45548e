//go:build !linux

package host

import "syscall"

// dieWithHost has no kernel support outside Linux; the plugin's own orphan
// check (see Serve) ends it instead. The plugin leads its own process
// group, so that Kill ends whatever it started too.
func dieWithHost() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }
