// Command listgetdisagree is a deliberately broken adapter, built only by
// the conformance suite's own tests. Its listing is right; its GetSandbox of
// a NotReady sandbox returns the sandbox without its pod's identity (no
// name, namespace or UID, attempt 0), as an adapter that reads identity
// from a running task would. Every check that gets only running sandboxes,
// or only a stopped sandbox's state, passes it. The suite must fail it on
// list-get-agree, and only there.
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

// listGetDisagree is the correct adapter whose GetSandbox forgets a
// stopped sandbox's pod.
type listGetDisagree struct {
	*dockerlabels.Adapter
}

// GetSandbox drops the identity of a NotReady sandbox.
func (l *listGetDisagree) GetSandbox(ctx context.Context, id string) (runtime.Sandbox, error) {
	sb, err := l.Adapter.GetSandbox(ctx, id)
	if err == nil && sb.State == runtime.StateNotReady {
		sb.Name, sb.Namespace, sb.UID, sb.Attempt = "", "", "", 0
	}
	return sb, err
}

func main() {
	endpoint := flag.String("endpoint", dockerlabels.DefaultEndpoint, "Docker Engine API address")
	flag.Parse()
	adapter, err := dockerlabels.New(*endpoint)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	plugin.Serve(&listGetDisagree{Adapter: adapter})
}
