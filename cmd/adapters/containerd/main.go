// Command containerd is the runtime adapter plugin for containerd, read
// through its own API (or its CRI plugin with --cri). ipamd launches it;
// run by hand it only says that it is a plugin. Flags map onto
// containerd.Config; see containerd.DefaultConfig for the defaults.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/sandboxipam/sandboxipam/adapters/containerd"
	"github.com/sandboxipam/sandboxipam/internal/version"
	"github.com/sandboxipam/sandboxipam/runtime/plugin"
)

func main() {
	if version.Requested(os.Args[1:]) {
		fmt.Println(version.Line("containerd adapter"))
		return
	}
	cfg := containerd.DefaultConfig()
	cfg.RegisterFlags(flag.CommandLine)
	flag.Parse()
	adapter, err := containerd.New(cfg, plugin.NewLogger())
	if err != nil {
		fmt.Fprintf(os.Stderr, "containerd adapter: %v\n", err)
		os.Exit(2)
	}
	plugin.Serve(adapter)
}
