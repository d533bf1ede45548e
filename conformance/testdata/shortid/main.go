// Command shortid is a deliberately broken adapter, built only by the
// conformance suite's own tests. It reports Docker's 12-character short
// IDs, as `docker ps` shows them, where the CNI plugin receives the full
// 64-character ID. The suite must fail it on rule 1.
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

// shortIDLength is `docker ps`'s ID width.
const shortIDLength = 12

// shortID is the correct adapter with every reported ID truncated.
type shortID struct {
	*dockerlabels.Adapter
}

// ListSandboxes truncates every ID.
func (s *shortID) ListSandboxes(ctx context.Context) ([]runtime.Sandbox, error) {
	sandboxes, err := s.Adapter.ListSandboxes(ctx)
	for i := range sandboxes {
		sandboxes[i].ID = truncate(sandboxes[i].ID)
	}
	return sandboxes, err
}

// GetSandbox truncates the ID it returns.
func (s *shortID) GetSandbox(ctx context.Context, id string) (runtime.Sandbox, error) {
	sb, err := s.Adapter.GetSandbox(ctx, id)
	sb.ID = truncate(sb.ID)
	return sb, err
}

func truncate(id string) string {
	if len(id) > shortIDLength {
		return id[:shortIDLength]
	}
	return id
}

func main() {
	endpoint := flag.String("endpoint", dockerlabels.DefaultEndpoint, "Docker Engine API address")
	flag.Parse()
	adapter, err := dockerlabels.New(*endpoint)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	plugin.Serve(&shortID{Adapter: adapter})
}
