package plugin

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/sandboxipam/sandboxipam/internal/testadapter"
)

// serveVersionEnv, in this test binary's environment, makes it serve the
// testadapter under that protocol version instead of running tests: an
// adapter built against another version of this package, which only this
// package's tests need, so no exported API offers it.
const (
	serveVersionEnv = "SANDBOXIPAM_PLUGIN_TEST_SERVE_VERSION"
	serveStateEnv   = "SANDBOXIPAM_PLUGIN_TEST_SERVE_STATE"
)

func TestMain(m *testing.M) {
	if v := os.Getenv(serveVersionEnv); v != "" {
		version, err := strconv.Atoi(v)
		if err != nil {
			fmt.Fprintf(os.Stderr, "%s must be an integer, got %q\n", serveVersionEnv, v)
			os.Exit(2)
		}
		serve(testadapter.New(os.Getenv(serveStateEnv)), version)
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
		Path: self,
		Env: []string{
			serveVersionEnv + "=" + strconv.Itoa(ProtocolVersion+1),
			serveStateEnv + "=" + writeState(t, fixtureState()),
		},
		Logger: testLogger(t),
	}
	_, err = Launch(testContext(t), cfg)
	if !errors.Is(err, ErrIncompatibleVersion) {
		t.Fatalf("Launch = %v, want ErrIncompatibleVersion", err)
	}
	if want := fmt.Sprintf("Plugin version: %d", ProtocolVersion+1); !strings.Contains(err.Error(), want) {
		t.Errorf("error %q does not name the plugin's version (%q)", err, want)
	}
}
