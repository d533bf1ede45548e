// Command docker is the runtime adapter plugin for pods that dockershim or
// cri-dockerd laid out in a Docker Engine, read through the Engine API.
// ipamd launches it; run by hand it only says that it is a plugin. Flags
// map onto docker.Config; see docker.DefaultConfig for the defaults.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/sandboxipam/sandboxipam/adapters/docker"
	"github.com/sandboxipam/sandboxipam/internal/version"
	"github.com/sandboxipam/sandboxipam/runtime/plugin"
)

func main() {
	if version.Requested(os.Args[1:]) {
		fmt.Println(version.Line("docker adapter"))
		return
	}
	cfg := docker.DefaultConfig()
	cfg.RegisterFlags(flag.CommandLine)
	flag.Parse()
	adapter, err := docker.New(cfg, plugin.NewLogger())
	if err != nil {
		fmt.Fprintf(os.Stderr, "docker adapter: %v\n", err)
		os.Exit(2)
	}
	plugin.Serve(adapter)
}
