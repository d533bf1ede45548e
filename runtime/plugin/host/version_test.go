package host

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	goplugin "github.com/hashicorp/go-plugin"

	"github.com/sandboxipam/sandboxipam/runtime/plugin"
	"github.com/sandboxipam/sandboxipam/runtime/plugin/internal/shared"
	adapterpb "github.com/sandboxipam/sandboxipam/runtime/plugin/proto"
)

// serveVersionEnv, in this test binary's environment, makes it serve as a
// plugin under that protocol version instead of running tests: an adapter
// built against another version of runtime/plugin, which only these tests
// need, so no exported API offers it. The handshake refuses it before any
// call, so the service behind it is the generated one that implements
// nothing: a host that let it through would fail the first ping instead,
// with another error than the one the test wants.
const serveVersionEnv = "SANDBOXIPAM_PLUGIN_TEST_SERVE_VERSION"

func TestMain(m *testing.M) {
	if v := os.Getenv(serveVersionEnv); v != "" {
		version, err := strconv.Atoi(v)
		if err != nil {
			fmt.Fprintf(os.Stderr, "%s must be an integer, got %q\n", serveVersionEnv, v)
			os.Exit(2)
		}
		goplugin.Serve(&goplugin.ServeConfig{
			HandshakeConfig:  shared.Handshake(),
			VersionedPlugins: shared.PluginSets(version, adapterpb.UnimplementedRuntimeAdapterServer{}),
			GRPCServer:       goplugin.DefaultGRPCServer,
		})
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func TestLaunchRefusesIncompatibleProtocolVersion(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{
		Path:   self,
		Env:    []string{serveVersionEnv + "=" + strconv.Itoa(plugin.ProtocolVersion+1)},
		Logger: testLogger(t),
	}
	_, err = Launch(testContext(t), cfg)
	if !errors.Is(err, ErrIncompatibleVersion) {
		t.Fatalf("Launch = %v, want ErrIncompatibleVersion", err)
	}
	if want := fmt.Sprintf("Plugin version: %d", plugin.ProtocolVersion+1); !strings.Contains(err.Error(), want) {
		t.Errorf("error %q does not name the plugin's version (%q)", err, want)
	}
}
