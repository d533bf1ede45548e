package crio_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sandboxipam/sandboxipam/adapters/crio"
	"github.com/sandboxipam/sandboxipam/adapters/internal/adaptertest"
	"github.com/sandboxipam/sandboxipam/adapters/internal/critest"
	"github.com/sandboxipam/sandboxipam/internal/testenv"
	"github.com/sandboxipam/sandboxipam/runtime"
)

var ctrd = testenv.SharedContainerd(testenv.ContainerdOptions{})

func TestMain(m *testing.M) {
	os.Exit(testenv.Run(m, ctrd))
}

func serveCRI(t *testing.T, flavor critest.Flavor) (*critest.Server, string) {
	t.Helper()
	dir, err := os.MkdirTemp("", "crio")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	path := filepath.Join(dir, "crio.sock")
	server := critest.NewServer(flavor)
	stop, err := server.Serve(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	return server, "unix://" + path
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

// Against a server answering as CRI-O does.
func TestListsCRIOSandboxes(t *testing.T) {
	server, endpoint := serveCRI(t, critest.CRIO())
	ready := critest.NewSandbox(critest.Pod{Name: "web", Namespace: "default", UID: "u1", Ready: true, IPs: []string{"198.18.0.9", "fd00::9"}})
	stopped := critest.NewSandbox(critest.Pod{Name: "job", Namespace: "batch", UID: "u2"})
	server.Add(ready)
	server.Add(stopped)
	adapter := newAdapter(t, endpoint, "")
	ctx := context.Background()

	listed, err := adapter.ListSandboxes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(listed) != 2 || listed[0].ID != ready.Id || listed[1].ID != stopped.Id ||
		listed[0].State != runtime.StateReady || listed[1].State != runtime.StateNotReady || len(listed[0].IPs) != 2 {
		t.Errorf("listed %+v", listed)
	}
	info, err := adapter.Info(ctx)
	if err != nil || info.RuntimeName != "cri-o" || info.AdapterName != "crio" {
		t.Errorf("Info = %+v, %v", info, err)
	}
	server.Remove(stopped.Id)
	if _, err := adapter.GetSandbox(ctx, stopped.Id); !errors.Is(err, runtime.ErrNotFound) {
		t.Errorf("GetSandbox(removed) error = %v, want ErrNotFound", err)
	}
}

func TestRefusesCRIDockerd(t *testing.T) {
	_, endpoint := serveCRI(t, critest.CRIDockerd())
	_, err := newAdapter(t, endpoint, "").ListSandboxes(context.Background())
	want := `endpoint ` + endpoint + ` serves runtime "docker", want "cri-o": endpoint serves another runtime`
	if !errors.Is(err, runtime.ErrWrongRuntime) || err.Error() != want {
		t.Errorf("error = %v\nwant    %s", err, want)
	}
}

// End to end over a real CRI server: containerd's, with the expected
// runtime name set to "containerd" through the config.
func TestListsContainerdCRISandboxes(t *testing.T) {
	c := ctrd.Get(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	scenario := adaptertest.BuildScenario(t, ctx, adaptertest.NewCRIFixture(t, ctx, c), nil)
	adapter := newAdapter(t, c.Endpoint, "containerd")
	listed := adaptertest.CheckListing(t, ctx, adapter, scenario)
	if ips := listed[scenario.Web.SandboxID].IPs; len(ips) == 0 {
		t.Errorf("running pod-network sandbox has no IP")
	}
	adaptertest.CheckGetSandbox(t, ctx, adapter, scenario)

	_, err := newAdapter(t, c.Endpoint, "").ListSandboxes(ctx)
	want := `endpoint ` + c.Endpoint + ` serves runtime "containerd", want "cri-o": endpoint serves another runtime`
	if !errors.Is(err, runtime.ErrWrongRuntime) || err.Error() != want {
		t.Errorf("default runtime name against containerd: error = %v\nwant %s", err, want)
	}
}
