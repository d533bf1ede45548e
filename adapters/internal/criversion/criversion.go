// Package criversion asks a CRI server which runtime it is. It is a leaf
// of its own so that an adapter that speaks another protocol (the docker
// adapter, the containerd adapter's native mode) can name the runtime it
// found on a socket that is not its own without importing the shared CRI
// client, package cri.
package criversion

import (
	"context"
	"fmt"
	"net"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	criv1 "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/sandboxipam/sandboxipam/adapters/internal/endpoint"
)

// Query asks the CRI server at uri for its runtime name and version.
func Query(ctx context.Context, uri string) (name, version string, err error) {
	conn, err := grpc.NewClient("passthrough:///cri",
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) {
			return endpoint.Dial(ctx, uri)
		}),
		grpc.WithAuthority("localhost"),
	)
	if err != nil {
		return "", "", fmt.Errorf("create CRI client for %s: %w", uri, err)
	}
	defer conn.Close()
	reply, err := criv1.NewRuntimeServiceClient(conn).Version(ctx, &criv1.VersionRequest{})
	if err != nil {
		return "", "", fmt.Errorf("query CRI version at %s: %w", uri, err)
	}
	return reply.GetRuntimeName(), reply.GetRuntimeVersion(), nil
}
