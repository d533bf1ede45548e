// Command dockershim is the runtime adapter plugin for Docker behind
// kubelet's dockershim or cri-dockerd, read over CRI. ipamd launches it;
// run by hand it only says that it is a plugin. Flags map onto
// dockershim.Config; see dockershim.DefaultConfig for the defaults.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/sandboxipam/sandboxipam/adapters/dockershim"
	"github.com/sandboxipam/sandboxipam/internal/version"
	"github.com/sandboxipam/sandboxipam/runtime/plugin"
)

func main() {
	if version.Requested(os.Args[1:]) {
		fmt.Println(version.Line("dockershim adapter"))
		return
	}
	cfg := dockershim.DefaultConfig()
	cfg.RegisterFlags(flag.CommandLine)
	flag.Parse()
	adapter, err := dockershim.New(cfg, plugin.NewLogger())
	if err != nil {
		fmt.Fprintf(os.Stderr, "dockershim adapter: %v\n", err)
		os.Exit(2)
	}
	plugin.Serve(adapter)
}
