package shared

import (
	"context"

	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	adapterpb "github.com/sandboxipam/sandboxipam/runtime/plugin/proto"
)

const (
	// The magic cookie is no security measure: it lets an adapter binary
	// run by hand say it is a plugin instead of hanging on its handshake.
	MagicCookieKey   = "SANDBOXIPAM_RUNTIME_ADAPTER"
	MagicCookieValue = "d3f5c1b2-infra-sandbox-id"

	// PluginName is the one plugin every adapter binary serves.
	PluginName = "runtime-adapter"

	// LogLevelEnv carries the host's log level (a LevelName) to the
	// plugin, so that the plugin does not format lines the host would
	// drop.
	LogLevelEnv = "SANDBOXIPAM_PLUGIN_LOG_LEVEL"
)

// Handshake is go-plugin's handshake both sides use; the protocol version
// goes in PluginSets.
func Handshake() goplugin.HandshakeConfig {
	return goplugin.HandshakeConfig{
		MagicCookieKey:   MagicCookieKey,
		MagicCookieValue: MagicCookieValue,
	}
}

// PluginSets serves the adapter service under protocol version. The plugin
// side passes its server; the host passes nil (it only dials).
func PluginSets(version int, server adapterpb.RuntimeAdapterServer) map[int]goplugin.PluginSet {
	return map[int]goplugin.PluginSet{
		version: {PluginName: &grpcPlugin{server: server}},
	}
}

// grpcPlugin binds the adapter service to go-plugin in gRPC mode only.
type grpcPlugin struct {
	goplugin.NetRPCUnsupportedPlugin
	server adapterpb.RuntimeAdapterServer // plugin side only
}

func (p *grpcPlugin) GRPCServer(_ *goplugin.GRPCBroker, s *grpc.Server) error {
	adapterpb.RegisterRuntimeAdapterServer(s, p.server)
	return nil
}

func (p *grpcPlugin) GRPCClient(_ context.Context, _ *goplugin.GRPCBroker, conn *grpc.ClientConn) (any, error) {
	return adapterpb.NewRuntimeAdapterClient(conn), nil
}
