package plugin

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	hclog "github.com/hashicorp/go-hclog"
	goplugin "github.com/hashicorp/go-plugin"

	"github.com/sandboxipam/sandboxipam/runtime"
	"github.com/sandboxipam/sandboxipam/runtime/plugin/internal/shared"
)

// ProtocolVersion is the adapter protocol this package speaks. It is the
// go-plugin handshake's version: a host refuses an adapter that serves
// another one (host.ErrIncompatibleVersion). It changes only with an
// incompatible change to adapter.proto.
const ProtocolVersion = 1

// orphanCheckInterval is how often a plugin checks that its host is still
// its parent.
const orphanCheckInterval = time.Second

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
	if os.Getenv(shared.MagicCookieKey) != shared.MagicCookieValue {
		fmt.Fprintln(os.Stderr, ByHandMessage(filepath.Base(os.Args[0])))
		os.Exit(2)
	}
	if adapter == nil {
		fmt.Fprintln(os.Stderr, "plugin.Serve: nil adapter")
		os.Exit(1)
	}
	level := shared.LevelFromName(os.Getenv(shared.LogLevelEnv))
	slog.SetDefault(newPluginLogger(os.Stderr, level))
	go exitWhenOrphaned(os.Getppid())
	// No TLSProvider: when the host asks for AutoMTLS, go-plugin's Serve
	// finds the host's certificate in PLUGIN_CLIENT_CERT and serves mTLS.
	goplugin.Serve(&goplugin.ServeConfig{
		HandshakeConfig:  shared.Handshake(),
		VersionedPlugins: shared.PluginSets(ProtocolVersion, &server{adapter: adapter}),
		GRPCServer:       goplugin.DefaultGRPCServer,
		Logger: hclog.New(&hclog.LoggerOptions{
			Name:       "go-plugin",
			Level:      shared.HclogLevel(level),
			Output:     os.Stderr,
			JSONFormat: true,
		}),
	})
}

// ByHandMessage is the line an adapter binary named name prints when it is
// run by hand instead of by a host.
func ByHandMessage(name string) string {
	return fmt.Sprintf("%s is a sandboxipam runtime adapter plugin, not a command: ipamd launches it "+
		"(runtime.adapter in its config names it or its path), and so does the conformance runner "+
		"(conformance run --adapter PATH); try %s --version or --help", name, name)
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
