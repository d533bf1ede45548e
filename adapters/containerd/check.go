package containerd

import (
	"context"
	"fmt"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/containerd/errdefs/pkg/errgrpc"

	"github.com/sandboxipam/sandboxipam/adapters/cri"
	"github.com/sandboxipam/sandboxipam/adapters/internal/endpoint"
	"github.com/sandboxipam/sandboxipam/runtime"
)

// criPluginFilter selects the CRI plugin in containerd's introspection
// listing: the gRPC plugin "cri" in containerd 1.x and 2.x alike.
const criPluginFilter = `type=="io.containerd.grpc.v1",id=="cri"`

// noCRI names, in every error about it, the containerd that an operator
// meets on a Docker or cri-dockerd node at the default socket.
const noCRI = "containerd without its CRI plugin (Docker's own containerd?)"

// checkContainerd asks containerd's Version service, which every
// containerd serves and no other runtime does, then its introspection
// service whether the CRI plugin is loaded, and returns the version.
// When the version call fails it finds out whether the socket is down or
// serves another runtime.
func (n *Native) checkContainerd(ctx context.Context) (string, error) {
	serverVersion, err := n.client.Version(ctx)
	if err == nil {
		return serverVersion.Version, n.checkCRIPlugin(ctx)
	}
	if ctx.Err() != nil {
		return "", n.unavailable(ctx, "query containerd version", err)
	}
	if wrong := n.identifyOther(ctx, errgrpc.ToNative(err)); wrong != nil {
		return "", wrong
	}
	return "", n.unavailable(ctx, "query containerd version", err)
}

// checkCRIPlugin returns ErrWrongRuntime unless containerd's CRI plugin is
// loaded. Without it containerd keeps no Kubernetes pods: namespace k8s.io
// is empty, and a successful empty listing would tell ipamd that every
// pod is gone. Docker's own containerd runs without it.
func (n *Native) checkCRIPlugin(ctx context.Context) error {
	reply, err := n.client.IntrospectionService().Plugins(ctx, criPluginFilter)
	if err != nil {
		return n.unavailable(ctx, "query containerd's CRI plugin", err)
	}
	plugins := reply.GetPlugins()
	if len(plugins) == 0 {
		return fmt.Errorf("endpoint %s serves %s: it runs no Kubernetes pods, want containerd with the CRI plugin loaded: %w",
			n.endpoint, noCRI, runtime.ErrWrongRuntime)
	}
	if initErr := plugins[0].GetInitErr(); initErr != nil {
		return fmt.Errorf("endpoint %s serves %s: the CRI plugin failed to load (%s), want containerd with the CRI plugin loaded: %w",
			n.endpoint, noCRI, initErr.GetMessage(), runtime.ErrWrongRuntime)
	}
	return nil
}

// identifyOther returns an ErrWrongRuntime error naming what answers on
// the socket when it is not containerd, and nil when the socket is down.
func (n *Native) identifyOther(ctx context.Context, versionErr error) error {
	want := fmt.Sprintf("want %q (the containerd API)", DefaultRuntimeName)
	if cerrdefs.IsNotImplemented(versionErr) {
		// gRPC, but no containerd API: a CRI-only runtime such as CRI-O
		// or cri-dockerd names itself through CRI.
		if name, _, err := cri.RuntimeNameAt(ctx, n.endpoint); err == nil {
			return fmt.Errorf("endpoint %s serves runtime %q (CRI only), %s: %w", n.endpoint, name, want, runtime.ErrWrongRuntime)
		}
		return fmt.Errorf("endpoint %s answers gRPC without the containerd API, %s: %w", n.endpoint, want, runtime.ErrWrongRuntime)
	}
	identity, err := endpoint.Identify(ctx, n.endpoint)
	switch {
	case err != nil || identity.Protocol != endpoint.ProtocolHTTP1:
		return nil
	case identity.IsDocker():
		return fmt.Errorf("endpoint %s serves runtime %q (%s), %s: %w", n.endpoint, "docker", identity.Describe(), want, runtime.ErrWrongRuntime)
	default:
		return fmt.Errorf("endpoint %s answers with %s, %s: %w", n.endpoint, identity.Describe(), want, runtime.ErrWrongRuntime)
	}
}

// unavailable wraps a failed call: the runtime could not be read, which
// must never pass for an empty node.
func (n *Native) unavailable(ctx context.Context, op string, err error) error {
	if ctx.Err() != nil {
		err = ctx.Err()
	}
	return fmt.Errorf("%s from %s: %w: %w", op, n.endpoint, runtime.ErrUnavailable, err)
}
