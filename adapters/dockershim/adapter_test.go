package dockershim

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sandboxipam/sandboxipam/adapters/internal/adaptertest"
	"github.com/sandboxipam/sandboxipam/conformance/fixture"
	"github.com/sandboxipam/sandboxipam/internal/testenv"
	"github.com/sandboxipam/sandboxipam/runtime"
)

// The adapter's tests run against real runtimes only: a private
// cri-dockerd (built by make test-tools from tools/cri-dockerd) on a
// private dockerd, and, with the runtime name overridden, containerd's CRI
// plugin. No CRI emulation is left here: everything the adapter must
// handle, a real one of the two shows.
var (
	ctrd       = testenv.SharedContainerd(testenv.ContainerdOptions{})
	dockerd    = testenv.SharedDocker(testenv.DockerOptions{})
	criDockerd = testenv.SharedCRIDockerd(dockerd, testenv.CRIDockerdOptions{})
)

func TestMain(m *testing.M) {
	os.Exit(testenv.Run(m, ctrd, dockerd, criDockerd))
}

// socketDir is short: t.TempDir can exceed the 108-byte socket path limit.
func socketDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "shim")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

func TestDefaultConfig(t *testing.T) {
	cfg := DefaultConfig()
	if cfg.Endpoint != "" || cfg.RuntimeName != "docker" {
		t.Errorf("DefaultConfig() = %+v, want no endpoint (auto) and runtime docker", cfg)
	}
	if got := defaultEndpoints(); len(got) != 2 || got[0] != "unix:///var/run/dockershim.sock" || got[1] != "unix:///var/run/cri-dockerd.sock" {
		t.Errorf("default endpoints = %v", got)
	}
	if err := cfg.Validate(); err != nil {
		t.Errorf("default config: %v", err)
	}
	bad := cfg
	bad.Endpoint = "tcp://127.0.0.1:1"
	if err := bad.Validate(); err == nil || !strings.HasPrefix(err.Error(), "dockershim.endpoint must be a unix socket URI") {
		t.Errorf("Validate() = %v, want a message naming dockershim.endpoint", err)
	}
}

// A configured endpoint is used alone: no fallback hides a typo.
func TestConfiguredEndpointHasNoFallback(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Endpoint = "unix://" + filepath.Join(socketDir(t), "absent.sock")
	adapter, err := New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer adapter.Close()
	if _, err := adapter.ListSandboxes(context.Background()); !errors.Is(err, runtime.ErrUnavailable) {
		t.Errorf("error = %v, want ErrUnavailable", err)
	}
}

// End to end over a real CRI server: containerd's, with the expected
// runtime name set to "containerd" through the config.
func TestListsContainerdCRISandboxes(t *testing.T) {
	c := ctrd.Get(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	web := adaptertest.CreatePod(t, ctx, adaptertest.NewCRIFixture(t, ctx, c),
		fixture.PodSpec{Name: "web", Namespace: "default", UID: "uid-web", Containers: []string{"app"}})
	cfg := DefaultConfig()
	cfg.Endpoint, cfg.RuntimeName = c.Endpoint, "containerd"
	adapter, err := New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer adapter.Close()
	if sb := adaptertest.ListByID(t, ctx, adapter)[web.SandboxID]; sb.ID != web.SandboxID || len(sb.IPs) == 0 {
		t.Errorf("running pod-network sandbox %s listed as %+v, want it with its IP", web.SandboxID, sb)
	}

	// The default runtime name refuses containerd.
	cfg.RuntimeName = DefaultRuntimeName
	strict, err := New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer strict.Close()
	if _, err := strict.ListSandboxes(ctx); !errors.Is(err, runtime.ErrWrongRuntime) {
		t.Errorf("default runtime name against containerd: error = %v, want ErrWrongRuntime", err)
	}
}
