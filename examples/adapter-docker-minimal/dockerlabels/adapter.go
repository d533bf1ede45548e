// Package dockerlabels is a minimal, complete runtime adapter for pods that
// kubelet's dockershim (or cri-dockerd) created in Docker Engine: it finds
// each pod's infra (pause) container by the io.kubernetes.docker.type
// label and reports its full container ID, which is the ID the CNI plugin
// receives.
//
// It is the example a third-party adapter author starts from (see
// docs/writing-an-adapter.md): it imports only the runtime contract, the
// runtime's own client library, and nothing of this project's adapters.
// It lives in its own package, apart from its main, so that it can be
// wrapped and tested in-process too.
package dockerlabels

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/client"

	"github.com/sandboxipam/sandboxipam/runtime"
)

// DefaultEndpoint is Docker Engine's usual socket.
const DefaultEndpoint = "unix:///var/run/docker.sock"

// Labels dockershim put on every pod container.
const (
	labelType      = "io.kubernetes.docker.type"
	typeSandbox    = "podsandbox"
	labelName      = "io.kubernetes.pod.name"
	labelNamespace = "io.kubernetes.pod.namespace"
	labelUID       = "io.kubernetes.pod.uid"
)

// Adapter lists dockershim pod sandboxes through the Docker Engine API.
type Adapter struct {
	endpoint string
	docker   *client.Client
}

var _ runtime.RuntimeAdapter = (*Adapter)(nil)

// New returns an adapter for the Engine at endpoint (DefaultEndpoint when
// empty). It does not connect: a runtime that is down at start is an error
// on each call, never a refusal to start.
func New(endpoint string) (*Adapter, error) {
	if endpoint == "" {
		endpoint = DefaultEndpoint
	}
	// Negotiation lets this client talk to older daemons (Debian's
	// dockerd 20.10 speaks API 1.41).
	docker, err := client.NewClientWithOpts(client.WithHost(endpoint), client.WithAPIVersionNegotiation())
	if err != nil {
		return nil, fmt.Errorf("docker client for %s: %w", endpoint, err)
	}
	return &Adapter{endpoint: endpoint, docker: docker}, nil
}

// Info names the adapter and the Engine behind it.
func (a *Adapter) Info(ctx context.Context) (runtime.Info, error) {
	version, err := a.docker.ServerVersion(ctx)
	if err != nil {
		return runtime.Info{}, unavailable("docker version", err)
	}
	return runtime.Info{AdapterName: "docker-minimal", AdapterVersion: "example",
		RuntimeName: "docker", RuntimeVersion: version.Version, Endpoint: a.endpoint}, nil
}

// ListSandboxes lists every pod sandbox container, running or stopped
// (rule 3: a stopped sandbox still owns its IP).
func (a *Adapter) ListSandboxes(ctx context.Context) ([]runtime.Sandbox, error) {
	containers, err := a.docker.ContainerList(ctx, container.ListOptions{
		All:     true,
		Filters: filters.NewArgs(filters.Arg("label", labelType+"="+typeSandbox)),
	})
	if err != nil {
		// Rule 2: never an empty list when Docker cannot be read.
		return nil, unavailable("list docker containers", err)
	}
	sandboxes := make([]runtime.Sandbox, 0, len(containers))
	for _, c := range containers {
		sandboxes = append(sandboxes, sandboxOf(c.ID, c.Names, c.Labels, c.State == container.StateRunning,
			time.Unix(c.Created, 0), c.HostConfig.NetworkMode))
	}
	return sandboxes, nil
}

// GetSandbox returns the sandbox whose full ID is id.
func (a *Adapter) GetSandbox(ctx context.Context, id string) (runtime.Sandbox, error) {
	if id == "" {
		return runtime.Sandbox{}, fmt.Errorf("get sandbox: empty ID: %w", runtime.ErrInvalidArgument)
	}
	details, err := a.docker.ContainerInspect(ctx, id)
	switch {
	case cerrdefs.IsNotFound(err):
		return runtime.Sandbox{}, fmt.Errorf("get sandbox %s: %w", id, runtime.ErrNotFound)
	case err != nil:
		return runtime.Sandbox{}, unavailable("inspect container "+id, err)
	}
	// Docker also resolves names and ID prefixes: only the full ID of a
	// pod sandbox counts (rule 1), and never an app container (rule 4).
	if details.ID != id || details.Config == nil || details.Config.Labels[labelType] != typeSandbox {
		return runtime.Sandbox{}, fmt.Errorf("get sandbox %s: not a pod sandbox: %w", id, runtime.ErrNotFound)
	}
	created, _ := time.Parse(time.RFC3339Nano, details.Created)
	running := details.State != nil && details.State.Running
	var network string
	if details.HostConfig != nil {
		network = string(details.HostConfig.NetworkMode)
	}
	return sandboxOf(details.ID, []string{details.Name}, details.Config.Labels, running, created, network), nil
}

// sandboxOf builds a Sandbox from what both the list and inspect calls give.
func sandboxOf(id string, names []string, labels map[string]string, running bool, created time.Time, network string) runtime.Sandbox {
	state := runtime.StateNotReady
	if running {
		state = runtime.StateReady
	}
	return runtime.Sandbox{
		ID:          id, // the full 64-hex ID, exactly as the CNI plugin receives it
		Name:        labels[labelName],
		Namespace:   labels[labelNamespace],
		UID:         labels[labelUID],
		Attempt:     attemptOf(names),
		State:       state,
		CreatedAt:   created.UTC(),
		HostNetwork: network == "host",
		Labels:      labels,
	}
}

// attemptOf parses the attempt from dockershim's sandbox name,
// "/k8s_POD_<pod>_<namespace>_<uid>_<attempt>".
func attemptOf(names []string) uint32 {
	for _, name := range names {
		parts := strings.Split(strings.TrimPrefix(name, "/"), "_")
		if len(parts) != 6 || parts[0] != "k8s" || parts[1] != "POD" {
			continue
		}
		if attempt, err := strconv.ParseUint(parts[5], 10, 32); err == nil {
			return uint32(attempt)
		}
	}
	return 0
}

// unavailable wraps a failure to reach or read Docker in
// runtime.ErrUnavailable, keeping a context error visible too.
func unavailable(op string, err error) error {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return fmt.Errorf("%s: %w: %w", op, runtime.ErrUnavailable, err)
	}
	return fmt.Errorf("%s: %w: %v", op, runtime.ErrUnavailable, err)
}
