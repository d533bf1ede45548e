package e2e_test

import (
	"context"
	"testing"

	"github.com/sandboxipam/sandboxipam/conformance/fixture"
)

// realScale is the scale check's size on the real CRI-O and cri-dockerd:
// cri-dockerd's pods start as slowly as Docker's.
const realScale = "5"

// TestRealCRIRuntimesConform runs the whole suite against the crio adapter
// on a real CRI-O and the dockershim adapter on a real cri-dockerd, each
// with its shipped defaults (runtime names "cri-o" and "docker"), pods
// made through the runtime's own CRI by the CRI fixture. The wrong runtime
// is the other real one; Docker's own containerd is containerd without
// CRI. Every check must pass; only no-plain-containers may skip, on CRI-O
// (see below), and runtime-restart runs in TestRealRuntimeRestart, on
// runtimes of their own.
func TestRealCRIRuntimesConform(t *testing.T) {
	t.Parallel()
	c := crio.Get(t)
	cd := criDockerd.Get(t)
	d := docker.Get(t)
	runs := map[string][]string{
		"crio": append([]string{"--adapter", binary(t, "crio"), "--scale", realScale, restartElsewhere,
			"--no-cri-endpoint=" + d.ContainerdEndpoint, "--wrong-runtime-arg=--endpoint=" + cd.Endpoint},
			realFixtureArgs(c.Endpoint, c.PauseImage, c.CgroupParent)...),
		"dockershim": append([]string{"--adapter", binary(t, "dockershim"), "--scale", realScale, restartElsewhere,
			"--adapter-arg=--timeout=2m", "--no-cri-endpoint=" + d.ContainerdEndpoint, "--wrong-runtime-arg=--endpoint=" + c.Endpoint,
			"--plain-docker-host=" + d.Host},
			realFixtureArgs(cd.Endpoint, cd.PauseImage, cd.CgroupParent)...),
	}
	results := runCLIConcurrently(t, runs)
	for name := range runs {
		t.Run(name, func(t *testing.T) {
			// On cri-dockerd a plain Docker container beside its pods
			// (--plain-docker-host) is the container no listing may show;
			// CRI-O serves nothing but its own pods, so no-plain-containers
			// skips there.
			var skipped []string
			if name == "crio" {
				skipped = []string{"no-plain-containers"}
			}
			expectOutcome(t, results[name], 0, nil, skipped, []string{"runtime-restart"})
			t.Logf("scale-listing: %v", results[name].result(t, "scale-listing").Notes)
		})
	}
}

// realFixtureArgs point the runner's CRI fixture and the adapter at a real
// CRI runtime; the fixture's calls share the runtime with the other runs,
// so they get the shared dockerd's bound.
func realFixtureArgs(endpoint, pauseImage, cgroupParent string) []string {
	return []string{"--fixture", "cri", "--endpoint", endpoint, "--pause-image", pauseImage,
		"--cgroup-parent", cgroupParent, sharedDockerCallTimeout}
}

// TestRealRuntimeRestart is TestRuntimeRestart's part on the real CRI-O
// and cri-dockerd: each is stopped and started under the shipped adapter
// while the adapter's process stays up.
func TestRealRuntimeRestart(t *testing.T) {
	t.Parallel()
	t.Run("crio", func(t *testing.T) {
		t.Parallel()
		c := restartCRIO.Get(t)
		runRealRestart(t, c.Endpoint, c.PauseImage, c.CgroupParent, c.StopDaemon, c.StartDaemon, crioRestartCases(c.Endpoint))
	})
	t.Run("cri-dockerd", func(t *testing.T) {
		t.Parallel()
		c := restartCRIDockerd.Get(t)
		runRealRestart(t, c.Endpoint, c.PauseImage, c.CgroupParent, c.StopDaemon, c.StartDaemon, criDockerdRestartCases(c.Endpoint))
	})
}

func runRealRestart(t *testing.T, endpoint, pauseImage, cgroupParent string, stop, start func(context.Context) error, cases []restartCase) {
	t.Helper()
	fix, err := fixture.NewCRI(t.Context(), fixture.CRIConfig{Endpoint: endpoint, PauseImage: pauseImage, CgroupParent: cgroupParent})
	if err != nil {
		t.Fatal(err)
	}
	cleanUpFixture(t, fix)
	runRestartCases(t, fixture.WithRuntimeControl(fix, stop, start), cases)
}

// crioRestartCases: the crio adapter through a real CRI-O's restart.
func crioRestartCases(endpoint string) []restartCase {
	return []restartCase{{name: "crio", adapter: "crio", args: []string{"--endpoint=" + endpoint}}}
}

// criDockerdRestartCases: the dockershim adapter through a real
// cri-dockerd's restart.
func criDockerdRestartCases(endpoint string) []restartCase {
	return []restartCase{{name: "dockershim", adapter: "dockershim", args: []string{"--endpoint=" + endpoint}}}
}
