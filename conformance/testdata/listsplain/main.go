// Command listsplain is a deliberately broken adapter, built only by the
// conformance suite's own tests. Besides the pod sandboxes it lists every
// Docker container that carries no Kubernetes label, as if it were a pod.
// The suite must fail it on rule 4.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/client"

	"github.com/sandboxipam/sandboxipam/examples/adapter-docker-minimal/dockerlabels"
	"github.com/sandboxipam/sandboxipam/runtime"
	"github.com/sandboxipam/sandboxipam/runtime/plugin"
)

// listsPlain is the correct adapter with plain containers added.
type listsPlain struct {
	*dockerlabels.Adapter
	docker *client.Client
}

// ListSandboxes appends every container without the dockershim type label.
func (l *listsPlain) ListSandboxes(ctx context.Context) ([]runtime.Sandbox, error) {
	sandboxes, err := l.Adapter.ListSandboxes(ctx)
	if err != nil {
		return nil, err
	}
	all, err := l.docker.ContainerList(ctx, container.ListOptions{All: true})
	if err != nil {
		return nil, fmt.Errorf("list containers: %w: %v", runtime.ErrUnavailable, err)
	}
	for _, c := range all {
		if _, kubernetes := c.Labels["io.kubernetes.docker.type"]; kubernetes {
			continue
		}
		state := runtime.StateNotReady
		if c.State == container.StateRunning {
			state = runtime.StateReady
		}
		sandboxes = append(sandboxes, runtime.Sandbox{ID: c.ID, State: state, Labels: c.Labels})
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
	docker, err := client.NewClientWithOpts(client.WithHost(*endpoint), client.WithAPIVersionNegotiation())
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	plugin.Serve(&listsPlain{Adapter: adapter, docker: docker})
}
