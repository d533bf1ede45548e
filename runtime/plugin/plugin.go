package plugin

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	hclog "github.com/hashicorp/go-hclog"
	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	"github.com/sandboxipam/sandboxipam/runtime"
	adapterpb "github.com/sandboxipam/sandboxipam/runtime/plugin/proto"
)

// ProtocolVersion is the adapter protocol this package speaks. It is the
// go-plugin handshake's version: a host refuses an adapter that serves
// another one (ErrIncompatibleVersion). It changes only with an
// incompatible change to adapter.proto.
const ProtocolVersion = 1

const (
	// The magic cookie is no security measure: it lets an adapter binary
	// run by hand say it is a plugin instead of hanging on its handshake.
	magicCookieKey   = "SANDBOXIPAM_RUNTIME_ADAPTER"
	magicCookieValue = "d3f5c1b2-infra-sandbox-id"

	// pluginName is the one plugin every adapter binary serves.
	pluginName = "runtime-adapter"

	// logLevelEnv carries the host's log level to the plugin, so that the
	// plugin does not format lines the host would drop.
	logLevelEnv = "SANDBOXIPAM_PLUGIN_LOG_LEVEL"

	// orphanCheckInterval is how often a plugin checks that its host is
	// still its parent.
	orphanCheckInterval = time.Second
)

func handshake() goplugin.HandshakeConfig {
	return goplugin.HandshakeConfig{
		MagicCookieKey:   magicCookieKey,
		MagicCookieValue: magicCookieValue,
	}
}

func pluginSets(version int, adapter runtime.RuntimeAdapter) map[int]goplugin.PluginSet {
	return map[int]goplugin.PluginSet{
		version: {pluginName: &grpcPlugin{adapter: adapter}},
	}
}

// grpcPlugin binds the adapter service to go-plugin in gRPC mode only.
type grpcPlugin struct {
	goplugin.NetRPCUnsupportedPlugin
	adapter runtime.RuntimeAdapter // plugin side only
}

func (p *grpcPlugin) GRPCServer(_ *goplugin.GRPCBroker, s *grpc.Server) error {
	adapterpb.RegisterRuntimeAdapterServer(s, &server{adapter: p.adapter})
	return nil
}

func (p *grpcPlugin) GRPCClient(_ context.Context, _ *goplugin.GRPCBroker, conn *grpc.ClientConn) (any, error) {
	return adapterpb.NewRuntimeAdapterClient(conn), nil
}

// Serve serves adapter to the host that launched this binary and returns
// when the host closes the plugin; main should then return. It is all an
// adapter's main needs:
//
//	func main() { plugin.Serve(myadapter.New(cfg)) }
//
// Serve installs NewLogger's logger as slog's default (and so the log
// package's output), so that everything the adapter logs through slog
// reaches the host's structured log. Run by hand, without a host (no
// go-plugin magic cookie in its environment), the binary prints one line
// saying what launches it, and how, and exits with status 2 (a usage
// error): go-plugin's own message would say nothing about ipamd.
func Serve(adapter runtime.RuntimeAdapter) {
	if os.Getenv(magicCookieKey) != magicCookieValue {
		fmt.Fprintln(os.Stderr, ByHandMessage(filepath.Base(os.Args[0])))
		os.Exit(2)
	}
	serve(adapter, ProtocolVersion)
}

// ByHandMessage is the line an adapter binary named name prints when it is
// run by hand instead of by a host.
func ByHandMessage(name string) string {
	return fmt.Sprintf("%s is a sandboxipam runtime adapter plugin, not a command: ipamd launches it "+
		"(runtime.adapter in its config names it or its path), and so does the conformance runner "+
		"(conformance run --adapter PATH); try %s --version or --help", name, name)
}

// serve serves adapter under protocol version: always ProtocolVersion,
// except in this package's tests, which prove that a host refuses an
// adapter built against another version (serve_version_test.go).
func serve(adapter runtime.RuntimeAdapter, version int) {
	if adapter == nil {
		fmt.Fprintln(os.Stderr, "plugin.Serve: nil adapter")
		os.Exit(1)
	}
	level := levelFromEnv(os.Getenv(logLevelEnv))
	slog.SetDefault(newPluginLogger(os.Stderr, level))
	go exitWhenOrphaned(os.Getppid())
	// No TLSProvider: when the host asks for AutoMTLS, go-plugin's Serve
	// finds the host's certificate in PLUGIN_CLIENT_CERT and serves mTLS.
	goplugin.Serve(&goplugin.ServeConfig{
		HandshakeConfig:  handshake(),
		VersionedPlugins: pluginSets(version, adapter),
		GRPCServer:       goplugin.DefaultGRPCServer,
		Logger: hclog.New(&hclog.LoggerOptions{
			Name:       "go-plugin",
			Level:      hclogLevel(level),
			Output:     os.Stderr,
			JSONFormat: true,
		}),
	})
}

// exitWhenOrphaned ends the plugin once its host is gone. On Linux the
// host also asks the kernel to kill the plugin with it (Pdeathsig); this
// covers hosts and systems where that is not set.
func exitWhenOrphaned(host int) {
	if host <= 1 {
		return // launched by init or a sub-reaper: nothing to watch
	}
	for range time.Tick(orphanCheckInterval) {
		if os.Getppid() != host {
			slog.Error("host process is gone; plugin exiting", "host_pid", host)
			os.Exit(1)
		}
	}
}
