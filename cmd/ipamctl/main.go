// Command ipamctl shows what a node's ipamd holds, through ipamd's
// introspection API on loopback TCP, and asks it to reconcile or release,
// through ipamd's admin socket (root or ipamd's uid only).
//
// The command line is spf13/cobra's, as kubectl's, calicoctl's and
// cilium's are: every subcommand has its own help and examples, the
// global flags (--addr, --admin-socket, -o/--output, --timeout) go before
// or after the subcommand, an unknown flag is an error wherever it is, and
// `ipamctl completion bash|zsh|fish` prints a completion script.
//
// Exit codes, which scripts may branch on:
//
//	0  done; for check, everything it compared agrees and it compared everything
//	1  an error, or check found a disagreement (or check --cluster a finding),
//	   or ready found ipamd not ready
//	2  usage: an unknown command or flag, a bad flag value, a missing argument
//	3  check found no disagreement but could not compare something (the
//	   runtime down, no adapter, the kernel unreadable): it says what on its
//	   first line, and a check that could not look never passes
package main

import (
	"fmt"
	"os"

	"github.com/sandboxipam/sandboxipam/internal/version"
)

func main() {
	if version.Requested(os.Args[1:]) {
		fmt.Println(version.Line("ipamctl"))
		return
	}
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}
