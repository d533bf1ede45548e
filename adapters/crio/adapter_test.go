package crio_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/sandboxipam/sandboxipam/adapters/crio"
	"github.com/sandboxipam/sandboxipam/adapters/internal/adaptertest"
	"github.com/sandboxipam/sandboxipam/conformance/fixture"
	"github.com/sandboxipam/sandboxipam/internal/testenv"
	"github.com/sandboxipam/sandboxipam/runtime"
)

// The adapter's tests run against real runtimes only: a private CRI-O
// (built by make test-tools from tools/crio) and, with the runtime name
// overridden, containerd's CRI plugin. No CRI emulation is left here:
// everything the adapter must handle, a real one of the two shows.
var (
	ctrd     = testenv.SharedContainerd(testenv.ContainerdOptions{})
	realCRIO = testenv.SharedCRIO(testenv.CRIOOptions{})
)

func TestMain(m *testing.M) {
	os.Exit(testenv.Run(m, ctrd, realCRIO))
}

func TestDefaultConfig(t *testing.T) {
	cfg := crio.DefaultConfig()
	if cfg.Endpoint != "unix:///var/run/crio/crio.sock" || cfg.RuntimeName != "cri-o" {
		t.Errorf("DefaultConfig() = %+v", cfg)
	}
	if err := cfg.Validate(); err != nil {
		t.Errorf("default config: %v", err)
	}
	cfg.RuntimeName = ""
	if err := cfg.Validate(); err == nil || !strings.HasPrefix(err.Error(), "crio.runtime_name must name the runtime") {
		t.Errorf("Validate() = %v, want a message naming crio.runtime_name", err)
	}
}

func newAdapter(t *testing.T, endpoint, runtimeName string) runtime.RuntimeAdapter {
	t.Helper()
	cfg := crio.DefaultConfig()
	cfg.Endpoint = endpoint
	if runtimeName != "" {
		cfg.RuntimeName = runtimeName
	}
	adapter, err := crio.New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { adapter.Close() })
	return adapter
}

// End to end over a real CRI server: containerd's, with the expected
// runtime name set to "containerd" through the config.
func TestListsContainerdCRISandboxes(t *testing.T) {
	c := ctrd.Get(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	web := adaptertest.CreatePod(t, ctx, adaptertest.NewCRIFixture(t, ctx, c),
		fixture.PodSpec{Name: "web", Namespace: "default", UID: "uid-web", Containers: []string{"app"}})
	adapter := newAdapter(t, c.Endpoint, "containerd")
	if sb := adaptertest.ListByID(t, ctx, adapter)[web.SandboxID]; sb.ID != web.SandboxID || len(sb.IPs) == 0 {
		t.Errorf("running pod-network sandbox %s listed as %+v, want it with its IP", web.SandboxID, sb)
	}

	_, err := newAdapter(t, c.Endpoint, "").ListSandboxes(ctx)
	want := `endpoint ` + c.Endpoint + ` serves runtime "containerd", want "cri-o": endpoint serves another runtime`
	if !errors.Is(err, runtime.ErrWrongRuntime) || err.Error() != want {
		t.Errorf("default runtime name against containerd: error = %v\nwant %s", err, want)
	}
}
