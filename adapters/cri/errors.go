package cri

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/sandboxipam/sandboxipam/adapters/internal/criversion"
	"github.com/sandboxipam/sandboxipam/adapters/internal/endpoint"
	"github.com/sandboxipam/sandboxipam/runtime"
)

// translate wraps a failed CRI call in the runtime package's sentinels, so
// that callers (and the plugin transport) can branch on them, and keeps
// the gRPC error for the message.
func (a *Adapter) translate(ctx context.Context, op string, err error) error {
	ep := a.endpoint()
	if isSentinel(err) {
		return fmt.Errorf("%s from %s: %w", op, ep, err)
	}
	switch {
	case isNotFound(err):
		return fmt.Errorf("%s from %s: %w: %w", op, ep, runtime.ErrNotFound, err)
	case status.Code(err) == codes.InvalidArgument:
		return fmt.Errorf("%s from %s: %w: %w", op, ep, runtime.ErrInvalidArgument, err)
	case status.Code(err) == codes.Unimplemented:
		return fmt.Errorf("endpoint %s answers gRPC but not the CRI v1 RuntimeService, want runtime %q: %w: %w",
			ep, a.cfg.RuntimeName, runtime.ErrWrongRuntime, err)
	case ctx.Err() != nil:
		return fmt.Errorf("%s from %s: %w: %w", op, ep, runtime.ErrUnavailable, ctx.Err())
	case status.Code(err) == codes.Unavailable:
		if wrong := a.identifyOther(ctx); wrong != nil {
			return wrong
		}
	}
	return fmt.Errorf("%s from %s: %w: %w", op, ep, runtime.ErrUnavailable, err)
}

// identifyOther tells a socket that answers with another protocol than
// gRPC (the Docker Engine API, typically) from one that is down. It
// returns nil when the endpoint is down or speaks HTTP/2.
func (a *Adapter) identifyOther(ctx context.Context) error {
	ep := a.endpoint()
	identity, err := endpoint.Identify(ctx, ep)
	if err != nil || identity.Protocol == endpoint.ProtocolHTTP2 {
		return nil
	}
	if identity.IsDocker() {
		return fmt.Errorf("endpoint %s serves runtime %q (%s), not CRI; want %q: %w",
			ep, "docker", identity.Describe(), a.cfg.RuntimeName, runtime.ErrWrongRuntime)
	}
	return fmt.Errorf("endpoint %s answers with %s, not CRI; want runtime %q: %w",
		ep, identity.Describe(), a.cfg.RuntimeName, runtime.ErrWrongRuntime)
}

func isSentinel(err error) bool {
	return errors.Is(err, runtime.ErrNotFound) || errors.Is(err, runtime.ErrUnavailable) ||
		errors.Is(err, runtime.ErrWrongRuntime) || errors.Is(err, runtime.ErrInvalidArgument)
}

// isNotFound reports a sandbox the runtime does not have. containerd and
// CRI-O answer codes.NotFound; dockershim and cri-dockerd pass Docker's
// "No such container" through as codes.Unknown.
func isNotFound(err error) bool {
	switch status.Code(err) {
	case codes.NotFound:
		return true
	case codes.Unknown:
		return strings.Contains(strings.ToLower(status.Convert(err).Message()), "no such container")
	default:
		return false
	}
}

// RuntimeNameAt asks the CRI server at uri for its runtime name and
// version (see package criversion, where it lives for adapters that do not
// otherwise speak CRI).
func RuntimeNameAt(ctx context.Context, uri string) (name, version string, err error) {
	return criversion.Query(ctx, uri)
}
