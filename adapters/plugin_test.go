package adapters_test

import (
	"context"
	"errors"
	"net/netip"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sandboxipam/sandboxipam/adapters/internal/adaptertest"
	"github.com/sandboxipam/sandboxipam/conformance"
	"github.com/sandboxipam/sandboxipam/conformance/conformancetest"
	"github.com/sandboxipam/sandboxipam/conformance/fixture"
	"github.com/sandboxipam/sandboxipam/runtime"
)

// conformanceConfig is the suite's configuration for one adapter binary,
// as an adapter author's own test would write it. runtime-restart is left
// out: it stops the runtime, which the package's tests share; the
// conformance e2e tests hold every shipped adapter to it against a
// runtime of its own. Three scale pods keep the run short: the node-sized
// listing is the conformance benchmark's (make bench).
func conformanceConfig(t *testing.T, binary string, f fixture.Fixture, args []string, endpointArgs func(string) []string) conformance.Config {
	return conformance.Config{
		AdapterPath:  binaryPath(t, binary),
		AdapterArgs:  args,
		Fixture:      f,
		EndpointArgs: endpointArgs,
		// Docker's own containerd is containerd without its CRI plugin.
		NoCRIEndpoint: dockerd.Get(t).ContainerdEndpoint,
		Scale:         3,
		Skip:          regexp.MustCompile(`^runtime-restart$`),
		// The shared daemons are slow on a busy machine.
		Timeout: 2 * time.Minute,
	}
}

// withEndpoint builds an adapter's arguments for an endpoint: fixed
// arguments, then --endpoint when endpoint is set.
func withEndpoint(fixed ...string) func(string) []string {
	return func(endpoint string) []string {
		if endpoint == "" {
			return slices.Clone(fixed)
		}
		return append(slices.Clone(fixed), "--endpoint="+endpoint)
	}
}

// TestDockerPluginConforms runs the conformance suite (conformancetest.Run)
// against the docker adapter binary reading a real Docker Engine that
// holds dockershim-style pods.
func TestDockerPluginConforms(t *testing.T) {
	d := dockerd.Get(t)
	c := ctrd.Get(t)
	// No deadline of the test's own: a shared one ran out on a loaded
	// machine before the last adapter's turn; go test -timeout bounds it.
	ctx := t.Context()
	// Docker never knows a dockershim pod's IP: the fixture puts one in
	// each pod's namespace, where the adapter must find it.
	f := adaptertest.NewDockerFixtureWithAddresses(t, ctx, d, netip.MustParsePrefix("198.18.200.0/24"))
	cfg := conformanceConfig(t, "docker", f, []string{"--endpoint=" + d.Host}, withEndpoint())
	cfg.WrongRuntimeArgs = []string{"--endpoint=" + c.Endpoint} // containerd's CRI is no Docker Engine
	conformancetest.Run(t, cfg)
	checkInfo(t, ctx, launch(t, "docker", "--endpoint="+d.Host), "docker", "docker", d.Host)
}

// TestCRIPluginsConform runs the conformance suite against every adapter
// that can read containerd (natively or over CRI), each through its
// binary, on pods made through containerd's CRI plugin. Kubelet's pod
// labels are left out, so that an adapter that takes the pod's identity
// from labels rather than the sandbox metadata fails.
func TestCRIPluginsConform(t *testing.T) {
	c := ctrd.Get(t)
	d := dockerd.Get(t)
	plugins := []struct {
		name, binary string
		fixed        []string // besides --endpoint
		wrong        []string // pointed at a runtime it was not built for
	}{
		{"containerd", "containerd", nil, []string{"--endpoint=" + d.Host}},
		{"containerd --cri", "containerd", []string{"--cri"}, []string{"--cri", "--endpoint=" + d.Host}},
		// Without --runtime-name=containerd they expect docker and cri-o.
		{"dockershim", "dockershim", []string{"--runtime-name=containerd"}, []string{"--endpoint=" + c.Endpoint}},
		{"crio", "crio", []string{"--runtime-name=containerd"}, []string{"--endpoint=" + c.Endpoint}},
	}
	for _, p := range plugins {
		t.Run(p.name, func(t *testing.T) {
			// Each adapter its own context, with no deadline of the
			// test's: one shared across the four ran out on a loaded
			// machine before crio's turn; go test -timeout bounds it.
			ctx := t.Context()
			args := withEndpoint(p.fixed...)
			cfg := conformanceConfig(t, p.binary, adaptertest.NewCRIFixture(t, ctx, c), args(c.Endpoint), args)
			cfg.WrongRuntimeArgs = p.wrong
			conformancetest.Run(t, cfg)
			checkInfo(t, ctx, launch(t, p.binary, args(c.Endpoint)...), p.binary, "containerd", c.Endpoint)
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
	// No deadline of the test's own: a shared one ran out on a loaded
	// machine before the last adapter's turn; go test -timeout bounds it.
	ctx := t.Context()
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
	// No deadline of the test's own: a shared one ran out on a loaded
	// machine before the last adapter's turn; go test -timeout bounds it.
	ctx := t.Context()
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
