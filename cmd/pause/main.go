// Command pause is the infra ("pause") process of the test pod images: it
// holds a pod's namespaces open, reaps the zombies of processes that were
// reparented to it, and exits 0 on SIGTERM or SIGINT.
//
// It is built static (CGO_ENABLED=0) so that an image holding only this
// binary runs without a libc.
package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/sandboxipam/sandboxipam/internal/version"
)

func main() {
	if version.Requested(os.Args[1:]) {
		fmt.Println(version.Line("pause"))
		return
	}
	signals := make(chan os.Signal, 8)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT, syscall.SIGCHLD)
	for sig := range signals {
		if sig == syscall.SIGCHLD {
			reapChildren()
			continue
		}
		os.Exit(0)
	}
}

// reapChildren collects every exited child without blocking. Signals
// coalesce, so one SIGCHLD may stand for several exits: loop until none is
// left.
func reapChildren() {
	for {
		var status syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &status, syscall.WNOHANG, nil)
		if pid <= 0 || err != nil {
			return
		}
	}
}
