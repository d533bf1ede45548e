package plugin

import (
	"context"

	"github.com/sandboxipam/sandboxipam/runtime"
	"github.com/sandboxipam/sandboxipam/runtime/plugin/internal/shared"
	adapterpb "github.com/sandboxipam/sandboxipam/runtime/plugin/proto"
)

// server is the plugin side: it serves one RuntimeAdapter over gRPC. The
// request context carries the host caller's deadline (gRPC sends it along),
// so the adapter sees the same deadline the host's caller set.
type server struct {
	adapterpb.UnimplementedRuntimeAdapterServer
	adapter runtime.RuntimeAdapter
}

func (s *server) Ping(context.Context, *adapterpb.PingRequest) (*adapterpb.PingResponse, error) {
	return &adapterpb.PingResponse{}, nil
}

func (s *server) Info(ctx context.Context, _ *adapterpb.InfoRequest) (*adapterpb.InfoResponse, error) {
	info, err := s.adapter.Info(ctx)
	if err != nil {
		return nil, shared.ToStatus(err)
	}
	return shared.ToProtoInfo(info), nil
}

func (s *server) ListSandboxes(ctx context.Context, _ *adapterpb.ListSandboxesRequest) (*adapterpb.ListSandboxesResponse, error) {
	sandboxes, err := s.adapter.ListSandboxes(ctx)
	if err != nil {
		return nil, shared.ToStatus(err)
	}
	return &adapterpb.ListSandboxesResponse{Sandboxes: shared.ToProtoSandboxes(sandboxes)}, nil
}

func (s *server) GetSandbox(ctx context.Context, req *adapterpb.GetSandboxRequest) (*adapterpb.GetSandboxResponse, error) {
	sandbox, err := s.adapter.GetSandbox(ctx, req.GetId())
	if err != nil {
		return nil, shared.ToStatus(err)
	}
	return &adapterpb.GetSandboxResponse{Sandbox: shared.ToProtoSandbox(&sandbox)}, nil
}
