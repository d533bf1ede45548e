// Command seedbug is a deliberately broken adapter, built only by the
// conformance suite's own tests. It reports each pod under the ID of the
// pod's first application container, with Kubernetes' "docker://" scheme,
// instead of the infra sandbox ID: exactly what an IPAM daemon once rebuilt
// from status.containerStatuses[].containerID, leaking every IP on DEL.
// The suite must fail it on rule 1.
//
// --only narrows the break to the shapes a suite once let pass:
// "one-app" renames only pods with exactly one app container (each coredns
// pod of the seed report had one), "restarted" only sandboxes of a
// restarted pod (attempt > 0).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/client"

	"github.com/sandboxipam/sandboxipam/examples/adapter-docker-minimal/dockerlabels"
	"github.com/sandboxipam/sandboxipam/runtime"
	"github.com/sandboxipam/sandboxipam/runtime/plugin"
)

// seedBug is the correct adapter with ListSandboxes broken.
type seedBug struct {
	*dockerlabels.Adapter
	docker *client.Client
	// only is "", "one-app" or "restarted" (see the package doc).
	only string
}

// ListSandboxes replaces each sandbox ID by "docker://" + the ID of the
// sandbox's oldest app container, as the pod status would show it.
func (s *seedBug) ListSandboxes(ctx context.Context) ([]runtime.Sandbox, error) {
	sandboxes, err := s.Adapter.ListSandboxes(ctx)
	if err != nil {
		return nil, err
	}
	apps, err := s.docker.ContainerList(ctx, container.ListOptions{
		All:     true,
		Filters: filters.NewArgs(filters.Arg("label", "io.kubernetes.docker.type=container")),
	})
	if err != nil {
		return nil, fmt.Errorf("list app containers: %w: %v", runtime.ErrUnavailable, err)
	}
	// Docker lists newest first: the last one seen per sandbox is its
	// first. dockershim labels each app container with its sandbox's ID.
	firstApp := make(map[string]string)
	appCount := make(map[string]int)
	for _, app := range apps {
		firstApp[app.Labels["io.kubernetes.sandbox.id"]] = app.ID
		appCount[app.Labels["io.kubernetes.sandbox.id"]]++
	}
	for i, sb := range sandboxes {
		if appID, ok := firstApp[sb.ID]; ok && s.breaks(sb, appCount[sb.ID]) {
			sandboxes[i].ID = "docker://" + appID
		}
	}
	return sandboxes, nil
}

// breaks reports whether sb, with apps app containers, is renamed.
func (s *seedBug) breaks(sb runtime.Sandbox, apps int) bool {
	switch s.only {
	case "one-app":
		return apps == 1
	case "restarted":
		return sb.Attempt > 0
	}
	return true
}

func main() {
	endpoint := flag.String("endpoint", dockerlabels.DefaultEndpoint, "Docker Engine API address")
	only := flag.String("only", "", `rename only pods with one app container ("one-app") or restarted pods ("restarted")`)
	flag.Parse()
	if *only != "" && *only != "one-app" && *only != "restarted" {
		fmt.Fprintf(os.Stderr, "--only must be one-app or restarted, got %q\n", *only)
		os.Exit(2)
	}
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
	plugin.Serve(&seedBug{Adapter: adapter, docker: docker, only: *only})
}
