// Package brokenbase serves a deliberately broken test adapter on either
// base a third-party author starts from: the shipped docker adapter
// (--base=docker, the default: dockershim-style pods in a Docker Engine,
// IPs from each sandbox's network namespace) or the shipped containerd
// adapter (--base=containerd; add --cri for its CRI client, which is what
// the crio and dockershim adapters run on too). The base's own flags
// follow --base. Built only by the conformance suite's own tests, so that
// each break is shown to fail the same checks on both bases.
package brokenbase

import (
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/sandboxipam/sandboxipam/adapters/containerd"
	"github.com/sandboxipam/sandboxipam/adapters/docker"
	"github.com/sandboxipam/sandboxipam/runtime"
	"github.com/sandboxipam/sandboxipam/runtime/plugin"
)

// Serve parses the command line, builds the chosen base adapter and serves
// wrap(base) as a plugin. It exits with status 2 on a bad command line.
func Serve(name string, wrap func(base runtime.RuntimeAdapter) runtime.RuntimeAdapter) {
	kind, args := baseKind(os.Args[1:])
	base, err := newBase(name, kind, args)
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
		os.Exit(2)
	}
	plugin.Serve(wrap(base))
}

// baseKind takes --base=KIND out of args; the rest are the base's flags.
func baseKind(args []string) (string, []string) {
	kind := "docker"
	var rest []string
	for _, arg := range args {
		if value, ok := strings.CutPrefix(arg, "--base="); ok {
			kind = value
			continue
		}
		rest = append(rest, arg)
	}
	return kind, rest
}

// newBase builds the base adapter of kind from its own flags.
func newBase(name, kind string, args []string) (runtime.RuntimeAdapter, error) {
	flags := flag.NewFlagSet(name, flag.ContinueOnError)
	switch kind {
	case "docker":
		cfg := docker.DefaultConfig()
		cfg.RegisterFlags(flags)
		if err := flags.Parse(args); err != nil {
			return nil, err
		}
		return docker.New(cfg, plugin.NewLogger())
	case "containerd":
		cfg := containerd.DefaultConfig()
		cfg.RegisterFlags(flags)
		if err := flags.Parse(args); err != nil {
			return nil, err
		}
		return containerd.New(cfg, plugin.NewLogger())
	}
	return nil, fmt.Errorf("--base must be docker or containerd, got %q", kind)
}
