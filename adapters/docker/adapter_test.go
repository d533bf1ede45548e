package docker_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/client"
	"google.golang.org/grpc"

	"github.com/sandboxipam/sandboxipam/adapters/docker"
	"github.com/sandboxipam/sandboxipam/adapters/internal/adaptertest"
	"github.com/sandboxipam/sandboxipam/conformance/fixture"
	"github.com/sandboxipam/sandboxipam/internal/testenv"
	"github.com/sandboxipam/sandboxipam/runtime"
)

var (
	dockerd = testenv.SharedDocker(testenv.DockerOptions{})
	ctrd    = testenv.SharedContainerd(testenv.ContainerdOptions{})
	// A real CRI-O, the CRI runtime the adapter must refuse.
	realCRIO = testenv.SharedCRIO(testenv.CRIOOptions{})
)

func TestMain(m *testing.M) {
	os.Exit(testenv.Run(m, dockerd, ctrd, realCRIO))
}

const testTimeout = 2 * time.Minute

func newAdapter(t *testing.T, endpoint string) *docker.Adapter {
	t.Helper()
	cfg := docker.DefaultConfig()
	cfg.Endpoint = endpoint
	adapter, err := docker.New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { adapter.Close() })
	return adapter
}

// TestDockershimSandboxesInDetail lays out pods as dockershim did and
// checks what only the docker adapter knows: the sandbox label, the
// network namespace of the sandbox's process (again after a restart), a
// listing from cached inspections equal to a fresh GetSandbox, and that
// the Engine's container names resolve to nothing. The contract's rules
// (every sandbox by its full ID, nothing else) are the conformance
// suite's: adapters/plugin_test.go runs it against the docker adapter.
func TestDockershimSandboxesInDetail(t *testing.T) {
	d := dockerd.Get(t)
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	f := adaptertest.NewDockerFixture(t, ctx, d)
	adapter := newAdapter(t, d.Host)
	scenario := adaptertest.BuildScenario(t, ctx, f)

	listed := adaptertest.ListByID(t, ctx, adapter)
	t.Run("labels", func(t *testing.T) {
		for _, pod := range scenario.Existing() {
			if got := listed[pod.SandboxID].Labels["io.kubernetes.docker.type"]; got != "podsandbox" {
				t.Errorf("sandbox %s io.kubernetes.docker.type = %q", pod.SandboxID, got)
			}
		}
	})
	t.Run("network namespace", func(t *testing.T) {
		sb := listed[scenario.Web.SandboxID]
		if !strings.HasPrefix(sb.NetNS, "/proc/") || !strings.HasSuffix(sb.NetNS, "/ns/net") {
			t.Fatalf("NetNS = %q, want /proc/<pid>/ns/net", sb.NetNS)
		}
		if _, err := os.Stat(sb.NetNS); err != nil {
			t.Errorf("NetNS %s: %v", sb.NetNS, err)
		}
		if got := listed[scenario.Stopped.SandboxID].NetNS; got != "" {
			t.Errorf("stopped sandbox NetNS = %q, want none", got)
		}
	})
	t.Run("list and get agree", func(t *testing.T) {
		// Listings build sandboxes from list entries and cached
		// inspections, GetSandbox from a fresh inspection.
		for _, pod := range scenario.Existing() {
			got, err := adapter.GetSandbox(ctx, pod.SandboxID)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, listed[pod.SandboxID]) {
				t.Errorf("GetSandbox = %+v\nlisted      %+v", got, listed[pod.SandboxID])
			}
		}
	})
	t.Run("restarted sandbox", func(t *testing.T) {
		testRestartedSandbox(t, ctx, d, adapter, scenario.Host)
	})
	t.Run("GetSandbox by name", func(t *testing.T) {
		// The Engine resolves container names; the adapter must not.
		name := fixture.DockerSandboxName(scenario.Web.Spec)
		if _, err := adapter.GetSandbox(ctx, name); !errors.Is(err, runtime.ErrNotFound) {
			t.Errorf("GetSandbox(%s) error = %v, want ErrNotFound", name, err)
		}
	})
}

// A restarted sandbox has a new process: the listing must not report the
// old one's namespace from its cache.
func testRestartedSandbox(t *testing.T, ctx context.Context, d *testenv.Docker, adapter *docker.Adapter, pod fixture.Pod) {
	engine, err := client.NewClientWithOpts(client.WithHost(d.Host), client.WithAPIVersionNegotiation())
	if err != nil {
		t.Fatal(err)
	}
	defer engine.Close()
	before := adaptertest.ListByID(t, ctx, adapter)[pod.SandboxID]
	if err := engine.ContainerRestart(ctx, pod.SandboxID, container.StopOptions{}); err != nil {
		t.Fatal(err)
	}
	details, err := engine.ContainerInspect(ctx, pod.SandboxID)
	if err != nil {
		t.Fatal(err)
	}
	after := adaptertest.ListByID(t, ctx, adapter)[pod.SandboxID]
	want := fmt.Sprintf("/proc/%d/ns/net", details.State.Pid)
	if after.NetNS != want || after.NetNS == before.NetNS || after.State != runtime.StateReady {
		t.Errorf("after restart: NetNS %q (before %q), state %s; want %s, Ready", after.NetNS, before.NetNS, after.State, want)
	}
}

func TestInfoNamesTheEngine(t *testing.T) {
	d := dockerd.Get(t)
	info, err := newAdapter(t, d.Host).Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if info.AdapterName != "docker" || info.RuntimeName != "docker" || !strings.HasPrefix(info.RuntimeVersion, "20.10") || info.Endpoint != d.Host {
		t.Errorf("Info = %+v, want docker 20.10.x at %s", info, d.Host)
	}
}

func TestUnreachableSocketIsUnavailable(t *testing.T) {
	adapter := newAdapter(t, "unix://"+filepath.Join(t.TempDir(), "docker.sock"))
	sandboxes, err := adapter.ListSandboxes(context.Background())
	if !errors.Is(err, runtime.ErrUnavailable) || sandboxes != nil {
		t.Fatalf("ListSandboxes = %v, %v; want nil, ErrUnavailable", sandboxes, err)
	}
	if _, err := adapter.Info(context.Background()); !errors.Is(err, runtime.ErrUnavailable) {
		t.Errorf("Info error = %v, want ErrUnavailable", err)
	}
}

// A real containerd socket is no Docker Engine: the refusal names the
// runtime that containerd's CRI plugin reports.
func TestContainerdSocketIsWrongRuntime(t *testing.T) {
	c := ctrd.Get(t)
	_, err := newAdapter(t, c.Endpoint).ListSandboxes(context.Background())
	if !errors.Is(err, runtime.ErrWrongRuntime) {
		t.Fatalf("error = %v, want ErrWrongRuntime", err)
	}
	want := fmt.Sprintf(`endpoint %s serves runtime "containerd" (CRI over gRPC), want "docker" (the Docker Engine API): endpoint serves another runtime`, c.Endpoint)
	if err.Error() != want {
		t.Errorf("error = %q\nwant    %q", err, want)
	}
}

// A CRI socket (a real CRI-O's) is named in the refusal.
func TestCRISocketIsWrongRuntime(t *testing.T) {
	c := realCRIO.Get(t)
	_, err := newAdapter(t, c.Endpoint).ListSandboxes(context.Background())
	if !errors.Is(err, runtime.ErrWrongRuntime) {
		t.Fatalf("error = %v, want ErrWrongRuntime", err)
	}
	want := fmt.Sprintf(`endpoint %s serves runtime "cri-o" (CRI over gRPC), want "docker" (the Docker Engine API): endpoint serves another runtime`, c.Endpoint)
	if err.Error() != want {
		t.Errorf("error = %q\nwant    %q", err, want)
	}
}

func TestExpiredContextIsHonoured(t *testing.T) {
	d := dockerd.Get(t)
	ctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel()
	_, err := newAdapter(t, d.Host).ListSandboxes(ctx)
	if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, runtime.ErrUnavailable) {
		t.Fatalf("error = %v, want DeadlineExceeded and ErrUnavailable", err)
	}
}

// A gRPC server without CRI (a containerd with its CRI plugin off, say)
// is refused for its protocol.
func TestGRPCSocketWithoutCRIIsWrongRuntime(t *testing.T) {
	dir, err := os.MkdirTemp("", "dkr")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	path := filepath.Join(dir, "grpc.sock")
	listener, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	server := grpc.NewServer()
	go server.Serve(listener)
	t.Cleanup(server.Stop)

	_, err = newAdapter(t, "unix://"+path).ListSandboxes(context.Background())
	want := fmt.Sprintf(`endpoint unix://%s answers with HTTP/2 (gRPC), not the Docker Engine API; want "docker": endpoint serves another runtime`, path)
	if !errors.Is(err, runtime.ErrWrongRuntime) || err.Error() != want {
		t.Errorf("error = %v\nwant    %s", err, want)
	}
}
