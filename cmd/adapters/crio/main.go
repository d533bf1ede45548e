// Command crio is the runtime adapter plugin for CRI-O, read over CRI.
// ipamd launches it; run by hand it only says that it is a plugin. Flags
// map onto crio.Config; see crio.DefaultConfig for the defaults.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/sandboxipam/sandboxipam/adapters/crio"
	"github.com/sandboxipam/sandboxipam/internal/version"
	"github.com/sandboxipam/sandboxipam/runtime/plugin"
)

func main() {
	if version.Requested(os.Args[1:]) {
		fmt.Println(version.Line("crio adapter"))
		return
	}
	cfg := crio.DefaultConfig()
	cfg.RegisterFlags(flag.CommandLine)
	flag.Parse()
	adapter, err := crio.New(cfg, plugin.NewLogger())
	if err != nil {
		fmt.Fprintf(os.Stderr, "crio adapter: %v\n", err)
		os.Exit(2)
	}
	plugin.Serve(adapter)
}
