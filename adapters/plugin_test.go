package adapters_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sandboxipam/sandboxipam/adapters/internal/adaptertest"
	"github.com/sandboxipam/sandboxipam/runtime"
)

const testTimeout = 3 * time.Minute

// TestDockerPluginListsDockershimPods runs the docker adapter binary as a
// plugin against a real Docker Engine holding dockershim-style pods.
func TestDockerPluginListsDockershimPods(t *testing.T) {
	d := dockerd.Get(t)
	binaryPath(t, "docker")
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	f := adaptertest.NewDockerFixture(t, ctx, d)
	scenario := adaptertest.BuildScenario(t, ctx, f, func(ctx context.Context) (string, error) {
		return f.CreatePlainContainer(ctx, "not-a-pod")
	})
	client := launch(t, "docker", "--endpoint="+d.Host)
	adaptertest.CheckListing(t, ctx, client, scenario)
	adaptertest.CheckGetSandbox(t, ctx, client, scenario)
	checkInfo(t, ctx, client, "docker", "docker", d.Host)
}

// TestCRIPluginsListContainerdPods runs every adapter that can read
// containerd (natively or over CRI) as a plugin against one set of pods
// made through containerd's CRI plugin.
func TestCRIPluginsListContainerdPods(t *testing.T) {
	c := ctrd.Get(t)
	binaryPath(t, "containerd")
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	scenario := adaptertest.BuildScenario(t, ctx, adaptertest.NewCRIFixture(t, ctx, c), nil)
	plugins := []struct {
		name, binary string
		args         []string
	}{
		{"containerd", "containerd", []string{"--endpoint=" + c.Endpoint}},
		{"containerd --cri", "containerd", []string{"--cri", "--endpoint=" + c.Endpoint}},
		{"dockershim", "dockershim", []string{"--endpoint=" + c.Endpoint, "--runtime-name=containerd"}},
		{"crio", "crio", []string{"--endpoint=" + c.Endpoint, "--runtime-name=containerd"}},
	}
	for _, p := range plugins {
		t.Run(p.name, func(t *testing.T) {
			client := launch(t, p.binary, p.args...)
			adaptertest.CheckListing(t, ctx, client, scenario)
			adaptertest.CheckGetSandbox(t, ctx, client, scenario)
			checkInfo(t, ctx, client, p.binary, "containerd", c.Endpoint)
		})
	}
}

func checkInfo(t *testing.T, ctx context.Context, adapter runtime.RuntimeAdapter, adapterName, runtimeName, endpoint string) {
	t.Helper()
	info, err := adapter.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.AdapterName != adapterName || info.RuntimeName != runtimeName || info.RuntimeVersion == "" ||
		info.Endpoint != endpoint || info.AdapterVersion == "" {
		t.Errorf("Info = %+v, want adapter %s, runtime %s at %s", info, adapterName, runtimeName, endpoint)
	}
}

// TestPluginsRefuseAnotherRuntime points each adapter at the other real
// runtime's socket: the refusal names what it found and crosses the
// plugin boundary as ErrWrongRuntime.
func TestPluginsRefuseAnotherRuntime(t *testing.T) {
	d, c := dockerd.Get(t), ctrd.Get(t)
	binaryPath(t, "docker")
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	cases := []struct {
		binary string
		args   []string
		found  string // what the message must name
	}{
		{"docker", []string{"--endpoint=" + c.Endpoint}, `serves runtime "containerd" (CRI over gRPC), want "docker"`},
		{"containerd", []string{"--endpoint=" + d.Host}, `serves runtime "docker" (the Docker Engine API 1.41), want "containerd"`},
		{"containerd", []string{"--cri", "--endpoint=" + d.Host}, `serves runtime "docker" (the Docker Engine API 1.41), not CRI; want "containerd"`},
		{"crio", []string{"--endpoint=" + c.Endpoint}, `serves runtime "containerd", want "cri-o"`},
		{"crio", []string{"--endpoint=" + d.Host}, `serves runtime "docker" (the Docker Engine API 1.41), not CRI; want "cri-o"`},
		{"dockershim", []string{"--endpoint=" + c.Endpoint}, `serves runtime "containerd", want "docker"`},
	}
	for _, tc := range cases {
		t.Run(tc.binary+" "+strings.Join(tc.args, " "), func(t *testing.T) {
			_, err := launch(t, tc.binary, tc.args...).ListSandboxes(ctx)
			if !errors.Is(err, runtime.ErrWrongRuntime) || !strings.Contains(err.Error(), tc.found) {
				t.Errorf("error = %v\nwant ErrWrongRuntime saying %s", err, tc.found)
			}
		})
	}
}

// TestPluginsReportUnreachableRuntime: an absent socket is an error
// wrapping ErrUnavailable on the host side, never an empty list.
func TestPluginsReportUnreachableRuntime(t *testing.T) {
	binaryPath(t, "docker")
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	absent := "--endpoint=unix://" + filepath.Join(t.TempDir(), "absent.sock")
	for _, args := range [][]string{{"docker", absent}, {"containerd", absent}, {"containerd", "--cri", absent}, {"crio", absent}, {"dockershim", absent}} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			sandboxes, err := launch(t, args[0], args[1:]...).ListSandboxes(ctx)
			if !errors.Is(err, runtime.ErrUnavailable) || sandboxes != nil {
				t.Errorf("ListSandboxes = %v, %v; want nil, ErrUnavailable", sandboxes, err)
			}
		})
	}
}
