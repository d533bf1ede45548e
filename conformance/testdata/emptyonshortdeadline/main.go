// Command emptyonshortdeadline is a deliberately broken adapter, built only
// by the conformance suite's own tests. When Docker cannot be read and the
// call's deadline was less than two seconds away, it reports an empty list
// and no error; with a longer deadline it fails correctly. A suite that
// calls a failing runtime only with its long default timeout passes it,
// and ipamd, whose calls carry short deadlines, would release every IP on
// the node. The suite must fail it on unreachable-is-error and
// runtime-restart.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/sandboxipam/sandboxipam/examples/adapter-docker-minimal/dockerlabels"
	"github.com/sandboxipam/sandboxipam/runtime"
	"github.com/sandboxipam/sandboxipam/runtime/plugin"
)

// shortDeadline is how near a deadline must be for the break to show.
const shortDeadline = 2 * time.Second

// emptyOnShortDeadline is the correct adapter with a short-deadline
// listing error swallowed.
type emptyOnShortDeadline struct {
	*dockerlabels.Adapter
}

// ListSandboxes turns a failure under a short deadline into an empty list.
func (e *emptyOnShortDeadline) ListSandboxes(ctx context.Context) ([]runtime.Sandbox, error) {
	deadline, ok := ctx.Deadline()
	short := ok && time.Until(deadline) < shortDeadline
	sandboxes, err := e.Adapter.ListSandboxes(ctx)
	if err != nil && short {
		return []runtime.Sandbox{}, nil
	}
	return sandboxes, err
}

func main() {
	endpoint := flag.String("endpoint", dockerlabels.DefaultEndpoint, "Docker Engine API address")
	flag.Parse()
	adapter, err := dockerlabels.New(*endpoint)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	plugin.Serve(&emptyOnShortDeadline{Adapter: adapter})
}
