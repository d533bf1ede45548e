// Command stalelist is a deliberately broken adapter, built only by the
// conformance suite's own tests. It answers every ListSandboxes after the
// first from the first one's result, as an adapter whose cache stopped
// being updated (a watch that died) would. GetSandbox asks Docker. ipamd
// would release the IP of every pod created since. The suite must fail it
// on listing-fresh (and on the other checks that list a pod they just
// stopped or removed).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"slices"
	"sync"

	"github.com/sandboxipam/sandboxipam/examples/adapter-docker-minimal/dockerlabels"
	"github.com/sandboxipam/sandboxipam/runtime"
	"github.com/sandboxipam/sandboxipam/runtime/plugin"
)

// staleList is the correct adapter behind a cache that is never refreshed.
type staleList struct {
	*dockerlabels.Adapter
	mu     sync.Mutex
	cached []runtime.Sandbox
}

// ListSandboxes lists once, then serves that listing for ever.
func (s *staleList) ListSandboxes(ctx context.Context) ([]runtime.Sandbox, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cached == nil {
		list, err := s.Adapter.ListSandboxes(ctx)
		if err != nil {
			return nil, err
		}
		s.cached = list
	}
	return slices.Clone(s.cached), nil
}

func main() {
	endpoint := flag.String("endpoint", dockerlabels.DefaultEndpoint, "Docker Engine API address")
	flag.Parse()
	adapter, err := dockerlabels.New(*endpoint)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	plugin.Serve(&staleList{Adapter: adapter})
}
