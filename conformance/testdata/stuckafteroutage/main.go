// Command stuckafteroutage is a deliberately broken adapter, built only by
// the conformance suite's own tests. Once a call finds the runtime down
// (an error that is not its own context ending), it gives up on the
// runtime: every later call fails with ErrUnavailable until the process is
// relaunched, as an adapter that dials once and never redials would. The
// suite must fail it on runtime-restart.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"sync/atomic"

	"github.com/sandboxipam/sandboxipam/examples/adapter-docker-minimal/dockerlabels"
	"github.com/sandboxipam/sandboxipam/runtime"
	"github.com/sandboxipam/sandboxipam/runtime/plugin"
)

// stuck is the correct adapter that latches its first outage.
type stuck struct {
	*dockerlabels.Adapter
	down atomic.Bool
}

// errGaveUp is every call's error once the adapter has given up.
var errGaveUp = fmt.Errorf("gave up on the runtime after an outage: %w", runtime.ErrUnavailable)

// ListSandboxes lists until the first outage.
func (s *stuck) ListSandboxes(ctx context.Context) ([]runtime.Sandbox, error) {
	if s.down.Load() {
		return nil, errGaveUp
	}
	list, err := s.Adapter.ListSandboxes(ctx)
	s.latch(ctx, err)
	return list, err
}

// GetSandbox looks up until the first outage.
func (s *stuck) GetSandbox(ctx context.Context, id string) (runtime.Sandbox, error) {
	if s.down.Load() {
		return runtime.Sandbox{}, errGaveUp
	}
	sb, err := s.Adapter.GetSandbox(ctx, id)
	s.latch(ctx, err)
	return sb, err
}

// latch gives up on an outage that the caller's deadline did not cause.
func (s *stuck) latch(ctx context.Context, err error) {
	if errors.Is(err, runtime.ErrUnavailable) && ctx.Err() == nil {
		s.down.Store(true)
	}
}

func main() {
	endpoint := flag.String("endpoint", dockerlabels.DefaultEndpoint, "Docker Engine API address")
	flag.Parse()
	adapter, err := dockerlabels.New(*endpoint)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	plugin.Serve(&stuck{Adapter: adapter})
}
