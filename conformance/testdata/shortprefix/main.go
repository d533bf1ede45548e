// Command shortprefix is a deliberately broken adapter, built only by the
// conformance suite's own tests. Its GetSandbox asks Docker to resolve the
// ID it is given, as `docker inspect` does, so a unique ID prefix (or a
// container name) finds a sandbox and returns it under its full ID. Its
// listing is right. The suite must fail it on get-sandbox-full-id-only.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"

	"github.com/docker/docker/client"

	"github.com/sandboxipam/sandboxipam/examples/adapter-docker-minimal/dockerlabels"
	"github.com/sandboxipam/sandboxipam/runtime"
	"github.com/sandboxipam/sandboxipam/runtime/plugin"
)

// shortPrefix is the correct adapter with Docker's ID resolution in
// GetSandbox.
type shortPrefix struct {
	*dockerlabels.Adapter
	docker *client.Client
}

// GetSandbox resolves id through Docker, then asks for the full ID.
func (s *shortPrefix) GetSandbox(ctx context.Context, id string) (runtime.Sandbox, error) {
	if id != "" {
		if details, err := s.docker.ContainerInspect(ctx, id); err == nil && details.ContainerJSONBase != nil {
			id = details.ID
		}
	}
	return s.Adapter.GetSandbox(ctx, id)
}

func main() {
	endpoint := flag.String("endpoint", dockerlabels.DefaultEndpoint, "Docker Engine API address")
	flag.Parse()
	adapter, err := dockerlabels.New(*endpoint)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	docker, err := client.NewClientWithOpts(client.WithHost(*endpoint), client.WithAPIVersionNegotiation())
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	plugin.Serve(&shortPrefix{Adapter: adapter, docker: docker})
}
