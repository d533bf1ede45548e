package docker

import (
	"context"
	"fmt"

	"github.com/sandboxipam/sandboxipam/adapters/internal/criversion"
	"github.com/sandboxipam/sandboxipam/adapters/internal/endpoint"
	"github.com/sandboxipam/sandboxipam/runtime"
)

// checkDocker pings the Engine (which also negotiates the API version)
// and, when the ping fails, finds out whether the socket is down or
// serves another runtime. Pings are cheap; checking on every call means a
// socket that changes hands is noticed.
func (a *Adapter) checkDocker(ctx context.Context) error {
	ping, err := a.client.Ping(ctx)
	if err == nil && ping.APIVersion != "" {
		return nil
	}
	if ctx.Err() != nil {
		return fmt.Errorf("ping Docker at %s: %w: %w", a.endpoint, runtime.ErrUnavailable, ctx.Err())
	}
	if wrong := a.identifyOther(ctx); wrong != nil {
		return wrong
	}
	if err == nil {
		err = fmt.Errorf("no Api-Version in the /_ping answer")
	}
	return fmt.Errorf("ping Docker at %s: %w: %w", a.endpoint, runtime.ErrUnavailable, err)
}

// identifyOther returns an ErrWrongRuntime error naming what answers on
// the socket when it is not the Docker Engine, and nil when the socket is
// down or is the Engine after all.
func (a *Adapter) identifyOther(ctx context.Context) error {
	identity, err := endpoint.Identify(ctx, a.endpoint)
	if err != nil || identity.IsDocker() || identity.Protocol == endpoint.ProtocolUnknown {
		return nil
	}
	// CRI-O answers HTTP/1 too on its CRI socket (its info API, beside
	// gRPC on the same listener): ask CRI's Version either way.
	if identity.Protocol == endpoint.ProtocolHTTP2 || identity.Protocol == endpoint.ProtocolHTTP1 {
		name, _, err := criversion.Query(ctx, a.endpoint)
		if err == nil {
			return fmt.Errorf("endpoint %s serves runtime %q (CRI over gRPC), want %q (the Docker Engine API): %w",
				a.endpoint, name, "docker", runtime.ErrWrongRuntime)
		}
	}
	return fmt.Errorf("endpoint %s answers with %s, not the Docker Engine API; want %q: %w",
		a.endpoint, identity.Describe(), "docker", runtime.ErrWrongRuntime)
}

// unavailable wraps a failed Engine request: the runtime could not be
// read, which must never pass for an empty node.
func (a *Adapter) unavailable(ctx context.Context, op string, err error) error {
	if ctx.Err() != nil {
		err = ctx.Err()
	}
	return fmt.Errorf("%s from %s: %w: %w", op, a.endpoint, runtime.ErrUnavailable, err)
}
