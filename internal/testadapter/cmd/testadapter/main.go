// Command testadapter is a runtime adapter plugin whose runtime is a JSON
// state file (see package testadapter). Tests launch it through package
// runtime/plugin.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/sandboxipam/sandboxipam/internal/testadapter"
	"github.com/sandboxipam/sandboxipam/runtime/plugin"
)

func main() {
	statePath := flag.String("state", "", "JSON state file, re-read on every call (required)")
	// ipamd's runtime.adapter auto passes the socket it found; the state
	// file is this adapter's runtime, so the endpoint is only accepted.
	_ = flag.String("endpoint", "", "the runtime socket ipamd's auto selection found (ignored)")
	flag.Parse()
	if *statePath == "" {
		fmt.Fprintln(os.Stderr, "testadapter: --state is required")
		os.Exit(2)
	}
	adapter := testadapter.New(*statePath)
	logger := plugin.NewLogger()
	logger.Info("testadapter serving", "state", *statePath)
	plugin.Serve(adapter)
}
