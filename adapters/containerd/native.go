package containerd

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"time"

	tasksapi "github.com/containerd/containerd/api/services/tasks/v1"
	"github.com/containerd/containerd/api/types/task"
	"github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/core/containers"
	cerrdefs "github.com/containerd/errdefs"
	"github.com/containerd/errdefs/pkg/errgrpc"
	"golang.org/x/sync/errgroup"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"

	"github.com/sandboxipam/sandboxipam/adapters/internal/endpoint"
	"github.com/sandboxipam/sandboxipam/internal/version"
	"github.com/sandboxipam/sandboxipam/runtime"
)

// The CRI plugin's marks on the containers it creates.
const (
	labelKind   = "io.cri-containerd.kind"
	kindSandbox = "sandbox"
	// sandboxFilter selects sandbox containers in a container listing.
	sandboxFilter = `labels."` + labelKind + `"==` + kindSandbox
)

// Native lists sandboxes through containerd's own API. It is safe for
// concurrent use.
type Native struct {
	cfg      Config
	endpoint string
	log      *slog.Logger
	client   *client.Client
	running  runningTasks
}

var _ runtime.RuntimeAdapter = (*Native)(nil)

// NewNative validates cfg and returns a native-mode adapter. It does not
// connect: every call reports runtime.ErrUnavailable until containerd
// answers.
func NewNative(cfg Config, log *slog.Logger) (*Native, error) {
	cfg.CRI = false
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	normalized, _ := endpoint.Normalize(cfg.Endpoint)
	path, _ := endpoint.SocketPath(cfg.Endpoint)
	ctrd, err := client.New(path,
		client.WithDefaultNamespace(cfg.Namespace),
		client.WithTimeout(cfg.Timeout),
		// A containerd restart must not leave the adapter in a long
		// reconnect backoff: ipamd asks again on its next reconcile.
		client.WithExtraDialOpts([]grpc.DialOption{
			grpc.WithConnectParams(grpc.ConnectParams{
				Backoff:           backoff.Config{BaseDelay: 50 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: time.Second},
				MinConnectTimeout: cfg.Timeout,
			}),
			// containerd's own dialer waits for a missing socket to
			// appear until the timeout; a down runtime must be reported
			// at once, not after every call's full timeout.
			grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) {
				return endpoint.Dial(ctx, normalized)
			}),
		}),
	)
	if err != nil {
		return nil, fmt.Errorf("create containerd client for %s: %w", normalized, err)
	}
	return &Native{cfg: cfg, endpoint: normalized, log: log, client: ctrd}, nil
}

// Close releases the connection.
func (n *Native) Close() error {
	return n.client.Close()
}

// Info reports the adapter and containerd's version.
func (n *Native) Info(ctx context.Context) (runtime.Info, error) {
	ctx, cancel := context.WithTimeout(ctx, n.cfg.Timeout)
	defer cancel()
	serverVersion, err := n.checkContainerd(ctx)
	if err != nil {
		return runtime.Info{}, err
	}
	return runtime.Info{
		AdapterName:    AdapterName,
		AdapterVersion: version.String(),
		RuntimeName:    DefaultRuntimeName,
		RuntimeVersion: serverVersion,
		Endpoint:       n.endpoint,
	}, nil
}

// ListSandboxes lists the sandbox containers, then asks each one's task
// (bounded concurrency) unless it is known to be running (runningTasks).
// containerd's task listing would be one call, but containerd asks every
// shim in the namespace for its state one after the other, app containers
// included: twice the shim round trips, serialised.
func (n *Native) ListSandboxes(ctx context.Context) ([]runtime.Sandbox, error) {
	ctx, cancel := context.WithTimeout(ctx, n.cfg.Timeout)
	defer cancel()
	if _, err := n.checkContainerd(ctx); err != nil {
		return nil, err
	}
	records, err := n.client.ContainerService().List(ctx, sandboxFilter)
	if err != nil {
		return nil, n.unavailable(ctx, "list sandbox containers", err)
	}
	processes := make([]*task.Process, len(records))
	group, groupCtx := errgroup.WithContext(ctx)
	group.SetLimit(n.cfg.StatusConcurrency)
	for i := range records {
		group.Go(func() error {
			id := records[i].ID
			if cached, ok := n.running.lookup(id); ok {
				processes[i] = cached
				return nil
			}
			process, err := n.process(groupCtx, id)
			processes[i] = process
			if err == nil {
				n.running.remember(id, process)
			}
			return err
		})
	}
	if err := group.Wait(); err != nil {
		return nil, err
	}
	listed := make(map[string]bool, len(records))
	sandboxes := make([]runtime.Sandbox, 0, len(records))
	for i := range records {
		listed[records[i].ID] = true
		sandbox, err := n.sandboxFromRecord(ctx, &records[i], processes[i])
		if err != nil {
			return nil, err
		}
		sandboxes = append(sandboxes, sandbox)
	}
	n.running.retain(listed)
	return sandboxes, nil
}

// GetSandbox returns the sandbox with exactly this ID; an application
// container's ID is not found.
func (n *Native) GetSandbox(ctx context.Context, id string) (runtime.Sandbox, error) {
	if id == "" {
		return runtime.Sandbox{}, fmt.Errorf("get sandbox: empty ID: %w", runtime.ErrInvalidArgument)
	}
	ctx, cancel := context.WithTimeout(ctx, n.cfg.Timeout)
	defer cancel()
	if _, err := n.checkContainerd(ctx); err != nil {
		return runtime.Sandbox{}, err
	}
	record, err := n.client.ContainerService().Get(ctx, id)
	if cerrdefs.IsNotFound(err) {
		return runtime.Sandbox{}, fmt.Errorf("get sandbox %s from %s: %w: %w", id, n.endpoint, runtime.ErrNotFound, err)
	}
	if err != nil {
		return runtime.Sandbox{}, n.unavailable(ctx, "get sandbox "+id, err)
	}
	if record.Labels[labelKind] != kindSandbox {
		return runtime.Sandbox{}, fmt.Errorf("get sandbox %s from %s: container is not a pod sandbox (%s=%q): %w",
			id, n.endpoint, labelKind, record.Labels[labelKind], runtime.ErrNotFound)
	}
	process, err := n.process(ctx, id)
	if err != nil {
		return runtime.Sandbox{}, err
	}
	return n.sandboxFromRecord(ctx, &record, process)
}

// process returns the sandbox's task, or nil when it has none.
func (n *Native) process(ctx context.Context, id string) (*task.Process, error) {
	reply, err := n.client.TaskService().Get(ctx, &tasksapi.GetRequest{ContainerID: id})
	if err != nil {
		if cerrdefs.IsNotFound(errgrpc.ToNative(err)) {
			return nil, nil
		}
		return nil, n.unavailable(ctx, "get task of sandbox "+id, err)
	}
	return reply.GetProcess(), nil
}

// sandboxFromRecord converts a sandbox container and its task, if any.
func (n *Native) sandboxFromRecord(ctx context.Context, record *containers.Container, process *task.Process) (runtime.Sandbox, error) {
	spec, err := parseSpec(record)
	if err != nil {
		return runtime.Sandbox{}, fmt.Errorf("read sandbox %s from %s: %w: %w", record.ID, n.endpoint, runtime.ErrUnavailable, err)
	}
	metadata, err := parseMetadata(record)
	if err != nil {
		// Only the IPs and the attempt come from it: list the sandbox.
		n.log.WarnContext(ctx, "sandbox metadata unreadable", "id", record.ID, "error", err)
	}
	sandbox := runtime.Sandbox{
		ID:          record.ID,
		Name:        spec.Annotations[annotationSandboxName],
		Namespace:   spec.Annotations[annotationSandboxNamespace],
		UID:         spec.Annotations[annotationSandboxUID],
		Attempt:     attempt(spec, metadata),
		State:       runtime.StateNotReady,
		CreatedAt:   record.CreatedAt.UTC(),
		HostNetwork: spec.networkNamespacePath() == nil,
		Labels:      record.Labels,
	}
	if process.GetStatus() == task.Status_RUNNING {
		sandbox.State = runtime.StateReady
		// The CRI plugin removes the namespace when it stops the sandbox;
		// only a running sandbox's path is worth reporting.
		switch path := spec.networkNamespacePath(); {
		case path != nil && *path != "":
			sandbox.NetNS = *path
		case path != nil && process.GetPid() > 0:
			// A namespace the runtime created without a bind mount.
			sandbox.NetNS = fmt.Sprintf("/proc/%d/ns/net", process.GetPid())
		}
	}
	// The CRI plugin releases the IP (CNI DEL) and removes the namespace
	// when it stops a sandbox, but its metadata keeps the old address.
	// Like CRI status, report the IPs only while the namespace exists.
	if sandbox.State == runtime.StateReady || namespaceExists(spec) {
		sandbox.IPs = metadata.podIPs()
	}
	return sandbox, nil
}

// namespaceExists reports whether the sandbox's network namespace is
// still mounted at the path its spec names.
func namespaceExists(spec sandboxSpec) bool {
	path := spec.networkNamespacePath()
	if path == nil || *path == "" {
		return false
	}
	_, err := os.Stat(*path)
	return err == nil
}
