// Command emptyonerror is a deliberately broken adapter, built only by the
// conformance suite's own tests. When Docker cannot be read it reports an
// empty list and no error, which ipamd would take for "no pods" and release
// every IP. The suite must fail it on rule 2.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"

	"github.com/sandboxipam/sandboxipam/examples/adapter-docker-minimal/dockerlabels"
	"github.com/sandboxipam/sandboxipam/runtime"
	"github.com/sandboxipam/sandboxipam/runtime/plugin"
)

// emptyOnError is the correct adapter with its listing error swallowed.
type emptyOnError struct {
	*dockerlabels.Adapter
}

// ListSandboxes turns every failure into an empty list.
func (e *emptyOnError) ListSandboxes(ctx context.Context) ([]runtime.Sandbox, error) {
	sandboxes, err := e.Adapter.ListSandboxes(ctx)
	if err != nil {
		return []runtime.Sandbox{}, nil
	}
	return sandboxes, nil
}

func main() {
	endpoint := flag.String("endpoint", dockerlabels.DefaultEndpoint, "Docker Engine API address")
	flag.Parse()
	adapter, err := dockerlabels.New(*endpoint)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	plugin.Serve(&emptyOnError{Adapter: adapter})
}
