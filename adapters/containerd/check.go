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

// checkContainerd asks containerd's Version service, which every
// containerd serves and no other runtime does, and returns the version.
// When the call fails it finds out whether the socket is down or serves
// another runtime.
func (n *Native) checkContainerd(ctx context.Context) (string, error) {
	serverVersion, err := n.client.Version(ctx)
	if err == nil {
		return serverVersion.Version, nil
	}
	if ctx.Err() != nil {
		return "", n.unavailable(ctx, "query containerd version", err)
	}
	if wrong := n.identifyOther(ctx, errgrpc.ToNative(err)); wrong != nil {
		return "", wrong
	}
	return "", n.unavailable(ctx, "query containerd version", err)
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
