// Package docker is the runtime adapter for pods that kubelet's dockershim
// (or cri-dockerd) laid out in a Docker Engine, read through the Engine
// API directly, without the shim.
//
// A pod sandbox is the pause container labelled
// io.kubernetes.docker.type=podsandbox and named
// k8s_POD_<pod>_<namespace>_<uid>_<attempt>; its full 64-hex container ID
// is the ID the CNI plugin receives. Application containers carry
// io.kubernetes.docker.type=container and are never listed. Stopped
// sandboxes are listed (NotReady) until they are removed.
//
// The Engine does not know a dockershim pod's IPs: the sandbox runs with
// --network none and the CNI plugin configures its network namespace. So
// a running sandbox that is not on the host network reports, besides any
// address Docker assigned itself, the global-scope unicast addresses
// (IPv4 and IPv6; not loopback, not link-local) on the interfaces inside
// its namespace, /proc/<pid>/ns/net of the pause process, read anew on
// every call, sorted. Reading a namespace takes root (CAP_SYS_ADMIN, to
// open a netlink socket in it). A sandbox whose namespace cannot be read,
// because its process just exited, reports no addresses from it and does
// not fail the call. Stopped and host-network sandboxes report none.
package docker

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/client"
	"golang.org/x/sync/errgroup"

	"github.com/sandboxipam/sandboxipam/adapters/internal/endpoint"
	"github.com/sandboxipam/sandboxipam/internal/version"
	"github.com/sandboxipam/sandboxipam/runtime"
)

// AdapterName is the name the adapter reports in Info.
const AdapterName = "docker"

// Labels dockershim and cri-dockerd put on the containers they create.
const (
	labelContainerType = "io.kubernetes.docker.type"
	typePodSandbox     = "podsandbox"
	labelPodName       = "io.kubernetes.pod.name"
	labelPodNamespace  = "io.kubernetes.pod.namespace"
	labelPodUID        = "io.kubernetes.pod.uid"
)

// Adapter lists dockershim-style pod sandboxes through the Docker Engine
// API. It is safe for concurrent use.
type Adapter struct {
	cfg      Config
	endpoint string
	log      *slog.Logger
	client   *client.Client
	cache    inspectionCache
}

var _ runtime.RuntimeAdapter = (*Adapter)(nil)

// New validates cfg and returns an adapter. It does not connect: every
// call reports runtime.ErrUnavailable until the daemon answers. A nil
// logger discards.
func New(cfg Config, log *slog.Logger) (*Adapter, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	log = cmp.Or(log, slog.New(slog.DiscardHandler))
	normalized, _ := endpoint.Normalize(cfg.Endpoint)
	// Negotiation: Debian's dockerd 20.10 speaks API 1.41 at most, older
	// than what this client asks for by default.
	docker, err := client.NewClientWithOpts(client.WithHost(normalized), client.WithAPIVersionNegotiation())
	if err != nil {
		return nil, fmt.Errorf("create Docker client for %s: %w", normalized, err)
	}
	return &Adapter{cfg: cfg, endpoint: normalized, log: log, client: docker}, nil
}

// Close releases the client's idle connections.
func (a *Adapter) Close() error {
	return a.client.Close()
}

// Info reports the adapter and the Docker Engine's version.
func (a *Adapter) Info(ctx context.Context) (runtime.Info, error) {
	ctx, cancel := context.WithTimeout(ctx, a.cfg.Timeout)
	defer cancel()
	if err := a.checkDocker(ctx); err != nil {
		return runtime.Info{}, err
	}
	serverVersion, err := a.client.ServerVersion(ctx)
	if err != nil {
		return runtime.Info{}, a.unavailable(ctx, "query Docker version", err)
	}
	return runtime.Info{
		AdapterName:    AdapterName,
		AdapterVersion: version.String(),
		RuntimeName:    "docker",
		RuntimeVersion: serverVersion.Version,
		Endpoint:       a.endpoint,
	}, nil
}

// ListSandboxes lists the pause containers in every state. The list
// lacks each sandbox's creation time to the nanosecond and its process
// ID; those come from an inspection, made once per sandbox and again only
// when a running sandbox's process is no longer its own (see
// inspectionCache).
func (a *Adapter) ListSandboxes(ctx context.Context) ([]runtime.Sandbox, error) {
	ctx, cancel := context.WithTimeout(ctx, a.cfg.Timeout)
	defer cancel()
	if err := a.checkDocker(ctx); err != nil {
		return nil, err
	}
	summaries, err := a.client.ContainerList(ctx, container.ListOptions{
		All:     true, // stopped sandboxes still own their IP
		Filters: filters.NewArgs(filters.Arg("label", labelContainerType+"="+typePodSandbox)),
	})
	if err != nil {
		return nil, a.unavailable(ctx, "list sandbox containers", err)
	}
	inspections, err := a.inspections(ctx, summaries)
	if err != nil {
		return nil, a.unavailable(ctx, "inspect sandbox containers", err)
	}
	sandboxes := make([]runtime.Sandbox, 0, len(summaries))
	pids := make([]int, 0, len(summaries))
	listed := make(map[string]bool, len(summaries))
	for i := range summaries {
		inspected, ok := inspections[i]
		if !ok {
			a.log.DebugContext(ctx, "sandbox removed while listing", "id", summaries[i].ID)
			continue
		}
		listed[summaries[i].ID] = true
		facts := factsFromSummary(&summaries[i], inspected)
		sandboxes = append(sandboxes, facts.sandbox())
		pids = append(pids, facts.pid)
	}
	a.cache.retain(listed)
	// The addresses are read on every listing, never cached: the CNI
	// plugin adds them after the sandbox starts.
	group, groupCtx := errgroup.WithContext(ctx)
	group.SetLimit(a.cfg.InspectConcurrency)
	for i := range sandboxes {
		group.Go(func() error {
			a.addNetnsIPs(groupCtx, &sandboxes[i], pids[i])
			return nil
		})
	}
	_ = group.Wait() // addNetnsIPs logs its own failures and never fails
	if ctx.Err() != nil {
		return nil, a.unavailable(ctx, "read sandbox network namespaces", ctx.Err())
	}
	return sandboxes, nil
}

// inspections returns, by index into summaries, each sandbox's cached or
// fresh inspection; a sandbox removed since the listing has none.
func (a *Adapter) inspections(ctx context.Context, summaries []container.Summary) (map[int]inspection, error) {
	found := make(map[int]inspection, len(summaries))
	var missing []int
	for i := range summaries {
		if cached, ok := a.cache.lookup(summaries[i].ID, isRunning(summaries[i].State)); ok {
			found[i] = cached
		} else {
			missing = append(missing, i)
		}
	}
	fresh := make([]*inspection, len(missing))
	group, groupCtx := errgroup.WithContext(ctx)
	group.SetLimit(a.cfg.InspectConcurrency)
	for j := range missing {
		group.Go(func() error {
			id := summaries[missing[j]].ID
			details, err := a.client.ContainerInspect(groupCtx, id)
			if cerrdefs.IsNotFound(err) {
				return nil // removed since the listing
			}
			if err != nil {
				return err
			}
			facts := a.factsFromInspect(groupCtx, &details)
			fresh[j] = &inspection{createdAt: facts.createdAt, pid: facts.pid}
			a.cache.store(id, *fresh[j])
			return nil
		})
	}
	if err := group.Wait(); err != nil {
		return nil, err
	}
	for j, entry := range fresh {
		if entry != nil {
			found[missing[j]] = *entry
		}
	}
	return found, nil
}

// GetSandbox returns the sandbox with exactly this ID. The Engine resolves
// names and ID prefixes; neither is what the CNI plugin received, and an
// application container is not a sandbox, so those are not found.
func (a *Adapter) GetSandbox(ctx context.Context, id string) (runtime.Sandbox, error) {
	if id == "" {
		return runtime.Sandbox{}, fmt.Errorf("get sandbox: empty ID: %w", runtime.ErrInvalidArgument)
	}
	ctx, cancel := context.WithTimeout(ctx, a.cfg.Timeout)
	defer cancel()
	if err := a.checkDocker(ctx); err != nil {
		return runtime.Sandbox{}, err
	}
	details, err := a.client.ContainerInspect(ctx, id)
	if cerrdefs.IsNotFound(err) {
		return runtime.Sandbox{}, fmt.Errorf("get sandbox %s from %s: %w: %w", id, a.endpoint, runtime.ErrNotFound, err)
	}
	if err != nil {
		return runtime.Sandbox{}, a.unavailable(ctx, "get sandbox "+id, err)
	}
	if details.ContainerJSONBase == nil || details.ID != id {
		return runtime.Sandbox{}, fmt.Errorf("get sandbox %s from %s: matches container %s by name or prefix only: %w",
			id, a.endpoint, details.ID, runtime.ErrNotFound)
	}
	if details.Config == nil || details.Config.Labels[labelContainerType] != typePodSandbox {
		return runtime.Sandbox{}, fmt.Errorf("get sandbox %s from %s: container is not a pod sandbox: %w",
			id, a.endpoint, runtime.ErrNotFound)
	}
	facts := a.factsFromInspect(ctx, &details)
	sandbox := facts.sandbox()
	a.addNetnsIPs(ctx, &sandbox, facts.pid)
	return sandbox, nil
}
