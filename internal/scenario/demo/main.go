// Command demo walks through the seed bug's scenario on a private
// containerd, this project's CNI plugin, ipamd and the containerd adapter,
// narrating each step. `make demo` builds everything and runs it as root.
//
// It lives under internal/scenario, not cmd/, because it is a development
// tool built on the tests' environment (internal/testenv starts the
// private runtimes): no shipped binary links test support, and
// `go list -deps` of every command under cmd/ shows none.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/sandboxipam/sandboxipam/internal/scenario"
	"github.com/sandboxipam/sandboxipam/internal/version"
)

func main() {
	if version.Requested(os.Args[1:]) {
		fmt.Println(version.Line("demo"))
		return
	}
	bin := flag.String("bin", "bin", "directory holding ipamd, ipamctl, sandboxipam and adapters/ (make build's output)")
	flag.Parse()
	abs, err := filepath.Abs(*bin)
	if err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := (scenario.Demo{BinDir: abs, Out: os.Stdout}).Run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}
