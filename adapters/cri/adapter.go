// Package cri is the CRI client shared by the adapters whose runtime
// speaks the Kubernetes Container Runtime Interface: dockershim and
// cri-dockerd, CRI-O, and containerd's CRI plugin.
//
// A listing is one ListPodSandbox call for every sandbox in every state,
// followed by one PodSandboxStatus call per sandbox (bounded concurrency)
// for the pod IPs and the network namespace mode, which the list reply
// lacks. Before the first listing the adapter checks Version().RuntimeName
// against the runtime it was configured for, so an adapter pointed at
// another runtime's socket says which runtime it found.
//
// Sandbox.NetNS stays empty: CRI has no field for it, and the verbose
// status that holds it is runtime-specific and, in containerd, costs a
// shim round trip per sandbox. The containerd adapter's native mode
// reports it.
package cri

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/credentials/insecure"
	criv1 "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/sandboxipam/sandboxipam/adapters/internal/endpoint"
	"github.com/sandboxipam/sandboxipam/internal/version"
	"github.com/sandboxipam/sandboxipam/runtime"
)

// maxMessageSize matches what kubelet and crictl accept: a node with
// hundreds of sandboxes answers ListPodSandbox with several megabytes.
const maxMessageSize = 16 << 20

// Adapter lists pod sandboxes over CRI. It is safe for concurrent use.
type Adapter struct {
	cfg    Config
	log    *slog.Logger
	conn   *grpc.ClientConn
	client criv1.RuntimeServiceClient
	// active is the endpoint the last connection went to: the configured
	// one or a fallback.
	active atomic.Pointer[string]

	mu       sync.Mutex
	verified bool // the runtime answered Version with cfg.RuntimeName
}

var _ runtime.RuntimeAdapter = (*Adapter)(nil)

// New validates cfg and returns an adapter. It does not connect: the
// runtime may start after the adapter, and every call reports
// runtime.ErrUnavailable until it does. A nil logger discards.
func New(cfg Config, log *slog.Logger) (*Adapter, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	log = cmp.Or(log, slog.New(slog.DiscardHandler))
	adapter := &Adapter{cfg: cfg, log: log}
	primary, _ := endpoint.Normalize(cfg.Endpoint)
	adapter.active.Store(&primary)
	conn, err := grpc.NewClient("passthrough:///cri",
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(adapter.dial),
		grpc.WithAuthority("localhost"),
		// A runtime restart must not leave the adapter in a long
		// reconnect backoff: ipamd asks again on its next reconcile.
		grpc.WithConnectParams(grpc.ConnectParams{
			Backoff:           backoff.Config{BaseDelay: 50 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: time.Second},
			MinConnectTimeout: cfg.Timeout,
		}),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(maxMessageSize)),
	)
	if err != nil {
		return nil, fmt.Errorf("create CRI client for %s: %w", primary, err)
	}
	adapter.conn = conn
	adapter.client = criv1.NewRuntimeServiceClient(conn)
	return adapter, nil
}

// Close releases the connection.
func (a *Adapter) Close() error {
	return a.conn.Close()
}

// dial connects to the configured endpoint or, when its socket is absent,
// to the first fallback whose socket answers.
func (a *Adapter) dial(ctx context.Context, _ string) (net.Conn, error) {
	candidates := append([]string{a.cfg.Endpoint}, a.cfg.FallbackEndpoints...)
	var firstErr error
	for _, candidate := range candidates {
		conn, err := endpoint.Dial(ctx, candidate)
		if err == nil {
			normalized, _ := endpoint.Normalize(candidate)
			a.active.Store(&normalized)
			return conn, nil
		}
		if firstErr == nil {
			firstErr = err
		}
		if !endpoint.IsAbsent(err) {
			break
		}
	}
	return nil, firstErr
}

// endpoint is the endpoint in use, for messages and Info.
func (a *Adapter) endpoint() string {
	return *a.active.Load()
}

// Info reports the adapter and the runtime's own name and version.
func (a *Adapter) Info(ctx context.Context) (runtime.Info, error) {
	ctx, cancel := context.WithTimeout(ctx, a.cfg.Timeout)
	defer cancel()
	reply, err := a.checkRuntime(ctx)
	if err != nil {
		return runtime.Info{}, err
	}
	return runtime.Info{
		AdapterName:    a.cfg.AdapterName,
		AdapterVersion: version.String(),
		RuntimeName:    reply.GetRuntimeName(),
		RuntimeVersion: reply.GetRuntimeVersion(),
		Endpoint:       a.endpoint(),
	}, nil
}

// checkRuntime asks Version and refuses a runtime other than the
// configured one.
func (a *Adapter) checkRuntime(ctx context.Context) (*criv1.VersionResponse, error) {
	reply, err := a.client.Version(ctx, &criv1.VersionRequest{})
	if err != nil {
		return nil, a.translate(ctx, "query CRI version", err)
	}
	if got := reply.GetRuntimeName(); got != a.cfg.RuntimeName {
		return nil, fmt.Errorf("endpoint %s serves runtime %q, want %q: %w",
			a.endpoint(), got, a.cfg.RuntimeName, runtime.ErrWrongRuntime)
	}
	a.mu.Lock()
	a.verified = true
	a.mu.Unlock()
	return reply, nil
}

// ensureRuntime checks the runtime once; later calls trust it.
func (a *Adapter) ensureRuntime(ctx context.Context) error {
	a.mu.Lock()
	verified := a.verified
	a.mu.Unlock()
	if verified {
		return nil
	}
	_, err := a.checkRuntime(ctx)
	return err
}

// ListSandboxes returns every sandbox in every state, with its IPs.
func (a *Adapter) ListSandboxes(ctx context.Context) ([]runtime.Sandbox, error) {
	ctx, cancel := context.WithTimeout(ctx, a.cfg.Timeout)
	defer cancel()
	if err := a.ensureRuntime(ctx); err != nil {
		return nil, err
	}
	// No filter: the default would still include NOTREADY sandboxes, but
	// an explicit empty request documents that every state is wanted.
	reply, err := a.client.ListPodSandbox(ctx, &criv1.ListPodSandboxRequest{})
	if err != nil {
		return nil, a.translate(ctx, "list pod sandboxes", err)
	}
	items := reply.GetItems()
	statuses := make([]*criv1.PodSandboxStatus, len(items))
	group, groupCtx := errgroup.WithContext(ctx)
	group.SetLimit(a.cfg.StatusConcurrency)
	for i := range items {
		group.Go(func() error {
			status, err := a.status(groupCtx, items[i].GetId())
			if err != nil && !isNotFound(err) {
				return err
			}
			statuses[i] = status // nil: no status for a listed sandbox
			return nil
		})
	}
	if err := group.Wait(); err != nil {
		return nil, a.translate(ctx, "read pod sandbox status", err)
	}
	sandboxes := make([]runtime.Sandbox, 0, len(items))
	for i, item := range items {
		sandboxes = append(sandboxes, a.sandboxOf(ctx, statuses[i], item))
	}
	return sandboxes, nil
}

// sandboxOf converts a listed sandbox with its status. Without a status
// it is built from the listing alone, NotReady and without IPs: the
// runtime listed it, so it still exists (rule 3) even though it has no
// status. cri-dockerd answers so for a sandbox whose pause container is
// gone while its checkpoint is kept, and it will still send that
// sandbox's CNI DEL; a sandbox removed between the two calls shows so
// once, and is gone from the next listing.
func (a *Adapter) sandboxOf(ctx context.Context, status *criv1.PodSandboxStatus, item *criv1.PodSandbox) runtime.Sandbox {
	if status != nil {
		return a.sandboxFromStatus(ctx, status, item)
	}
	a.log.DebugContext(ctx, "listed sandbox has no status; listed from the listing alone, NotReady", "id", item.GetId())
	metadata := item.GetMetadata()
	return runtime.Sandbox{
		ID:        item.GetId(),
		Name:      metadata.GetName(),
		Namespace: metadata.GetNamespace(),
		UID:       metadata.GetUid(),
		Attempt:   metadata.GetAttempt(),
		State:     runtime.StateNotReady,
		CreatedAt: time.Unix(0, item.GetCreatedAt()).UTC(),
		Labels:    maps.Clone(item.GetLabels()),
	}
}

// GetSandbox returns the sandbox with exactly this ID. Whether the ID is
// a sandbox's at all is asked of ListPodSandbox, filtered by the ID:
// runtimes resolve ID prefixes in PodSandboxStatus, and cri-dockerd
// answers it for an application container's ID too, with that ID, state
// READY and the pod's IP. Neither is the ID the CNI plugin received, so
// both are reported as not found.
func (a *Adapter) GetSandbox(ctx context.Context, id string) (runtime.Sandbox, error) {
	if id == "" {
		return runtime.Sandbox{}, fmt.Errorf("get sandbox: empty ID: %w", runtime.ErrInvalidArgument)
	}
	ctx, cancel := context.WithTimeout(ctx, a.cfg.Timeout)
	defer cancel()
	if err := a.ensureRuntime(ctx); err != nil {
		return runtime.Sandbox{}, err
	}
	item, err := a.listedAs(ctx, id)
	if err != nil {
		return runtime.Sandbox{}, err
	}
	status, err := a.status(ctx, id)
	switch {
	case err != nil && !isNotFound(err):
		return runtime.Sandbox{}, a.translate(ctx, "get sandbox "+id, err)
	case err == nil && status.GetId() != id:
		return runtime.Sandbox{}, fmt.Errorf("get sandbox %s from %s: the runtime answered for %s: %w",
			id, a.endpoint(), status.GetId(), runtime.ErrNotFound)
	}
	return a.sandboxOf(ctx, status, item), nil
}

// listedAs returns the sandbox ListPodSandbox lists under exactly id, or
// an ErrNotFound error. The listing filtered by ID comes first; when it
// does not hold id, the unfiltered listing decides: cri-dockerd adds the
// sandboxes it knows only from their checkpoint (pause container removed
// behind its back) to an unfiltered listing alone, and ListSandboxes lists
// those NotReady. GetSandbox must agree: such a sandbox's app containers
// may still hold its network namespace and address, and cri-dockerd still
// sends its CNI DEL when kubelet removes it, so it is reported as existing,
// NotReady, not as gone.
func (a *Adapter) listedAs(ctx context.Context, id string) (*criv1.PodSandbox, error) {
	for _, filter := range []*criv1.PodSandboxFilter{{Id: id}, nil} {
		reply, err := a.client.ListPodSandbox(ctx, &criv1.ListPodSandboxRequest{Filter: filter})
		if err != nil {
			return nil, a.translate(ctx, "get sandbox "+id, err)
		}
		for _, item := range reply.GetItems() {
			if item.GetId() == id {
				return item, nil
			}
		}
	}
	return nil, fmt.Errorf("get sandbox %s from %s: no pod sandbox is listed under exactly this ID: %w",
		id, a.endpoint(), runtime.ErrNotFound)
}

func (a *Adapter) status(ctx context.Context, id string) (*criv1.PodSandboxStatus, error) {
	reply, err := a.client.PodSandboxStatus(ctx, &criv1.PodSandboxStatusRequest{PodSandboxId: id})
	if err != nil {
		return nil, err
	}
	if reply.GetStatus() == nil {
		return nil, fmt.Errorf("sandbox %s: runtime answered without a status", id)
	}
	return reply.GetStatus(), nil
}
