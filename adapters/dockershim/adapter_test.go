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
	"github.com/sandboxipam/sandboxipam/adapters/internal/critest"
	"github.com/sandboxipam/sandboxipam/internal/testenv"
	"github.com/sandboxipam/sandboxipam/runtime"
)

var ctrd = testenv.SharedContainerd(testenv.ContainerdOptions{})

func TestMain(m *testing.M) {
	os.Exit(testenv.Run(m, ctrd))
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

func serve(t *testing.T, flavor critest.Flavor, path string) *critest.Server {
	t.Helper()
	server := critest.NewServer(flavor)
	stop, err := server.Serve(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	return server
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

// With no endpoint configured and no dockershim socket, the adapter finds
// cri-dockerd at its socket, and uses dockershim's once it appears.
func TestFallsBackToCRIDockerdSocket(t *testing.T) {
	dir := socketDir(t)
	dockershimSocket, criDockerdSocket := filepath.Join(dir, "dockershim.sock"), filepath.Join(dir, "cri-dockerd.sock")
	server := serve(t, critest.CRIDockerd(), criDockerdSocket)
	sandbox := critest.NewSandbox(critest.Pod{Name: "web", Namespace: "default", UID: "u1", Ready: true, IPs: []string{"198.18.0.7"}})
	server.Add(sandbox)

	adapter, err := newWithDefaults(DefaultConfig(), []string{"unix://" + dockershimSocket, "unix://" + criDockerdSocket}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer adapter.Close()
	ctx := context.Background()
	sandboxes, err := adapter.ListSandboxes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(sandboxes) != 1 || sandboxes[0].ID != sandbox.Id {
		t.Fatalf("listed %+v, want only %s", sandboxes, sandbox.Id)
	}
	info, err := adapter.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.Endpoint != "unix://"+criDockerdSocket || info.RuntimeName != "docker" || info.AdapterName != "dockershim" {
		t.Errorf("Info = %+v, want docker at the cri-dockerd socket", info)
	}
	if _, err := adapter.GetSandbox(ctx, sandbox.Id[:12]); !errors.Is(err, runtime.ErrNotFound) {
		t.Errorf("GetSandbox(short ID) error = %v, want ErrNotFound", err)
	}
	// cri-dockerd answers PodSandboxStatus for an app container's ID as if
	// it were a sandbox; the adapter must not.
	appID := critest.NewID()
	server.AddAppContainer(sandbox.Id, appID)
	if got, err := adapter.GetSandbox(ctx, appID); !errors.Is(err, runtime.ErrNotFound) {
		t.Errorf("GetSandbox(app container) = %+v, %v; want ErrNotFound", got, err)
	}
	// cri-dockerd answers an unknown sandbox with Docker's "No such
	// container" and code Unknown.
	if _, err := adapter.GetSandbox(ctx, critest.NewID()); !errors.Is(err, runtime.ErrNotFound) {
		t.Errorf("GetSandbox(unknown) error = %v, want ErrNotFound", err)
	}
}

func TestPrefersDockershimSocketWhenPresent(t *testing.T) {
	dir := socketDir(t)
	dockershimSocket, criDockerdSocket := filepath.Join(dir, "dockershim.sock"), filepath.Join(dir, "cri-dockerd.sock")
	serve(t, critest.CRIDockerd(), dockershimSocket)
	serve(t, critest.CRIDockerd(), criDockerdSocket)
	adapter, err := newWithDefaults(DefaultConfig(), []string{"unix://" + dockershimSocket, "unix://" + criDockerdSocket}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer adapter.Close()
	info, err := adapter.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if info.Endpoint != "unix://"+dockershimSocket {
		t.Errorf("Info.Endpoint = %s, want the dockershim socket", info.Endpoint)
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

func TestRefusesCRIO(t *testing.T) {
	path := filepath.Join(socketDir(t), "crio.sock")
	serve(t, critest.CRIO(), path)
	cfg := DefaultConfig()
	cfg.Endpoint = "unix://" + path
	adapter, err := New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer adapter.Close()
	_, err = adapter.ListSandboxes(context.Background())
	want := `endpoint unix://` + path + ` serves runtime "cri-o", want "docker": endpoint serves another runtime`
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
	cfg := DefaultConfig()
	cfg.Endpoint, cfg.RuntimeName = c.Endpoint, "containerd"
	adapter, err := New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer adapter.Close()
	listed := adaptertest.CheckListing(t, ctx, adapter, scenario)
	if ips := listed[scenario.Web.SandboxID].IPs; len(ips) == 0 {
		t.Errorf("running pod-network sandbox has no IP")
	}
	adaptertest.CheckGetSandbox(t, ctx, adapter, scenario)

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
