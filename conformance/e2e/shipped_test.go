package e2e_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/sandboxipam/sandboxipam/ipamd/config"
)

// Scale check sizes. The scale pods join the dozen or so that a run's
// other checks hold at that moment, so the listing holds some 20 (Docker)
// or 60 (containerd) pods: an adapter that pages or truncates shows it.
// They are few enough that the package's concurrent runs fit a two-core
// machine: a scale pod costs a shim, runc and three CNI plugin execs to
// create and as many to remove, and at 110 containerd pods the scale
// check was two thirds of its run. The node-sized listing, 200 pods
// through every shipped adapter, is BenchmarkConformanceMode's (make
// bench). Docker's pods start several times slower than containerd's.
const (
	dockerScale     = "10"
	containerdScale = "50"
	smallScale      = "3"
)

// restartElsewhere is the runner's --skip for the shipped adapters' whole
// runs: runtime-restart stops the runtime, and the whole runs share theirs
// with every other test of the package. TestRuntimeRestart holds every
// shipped adapter to it, each against a runtime of its own
// (TestEveryShippedAdapterMeetsEveryCheck says so), so no check goes
// unchecked on a shipped adapter, and none may skip.
const restartElsewhere = "--skip=^runtime-restart$"

// TestDockerAdapterConforms runs the whole suite against the shipped
// docker adapter with the docker fixture, as a plain `--fixture docker`
// run: the runner finds Docker's own containerd and uses it for
// containerd-without-cri-refused and as the wrong runtime. Every check
// must pass; none may skip.
func TestDockerAdapterConforms(t *testing.T) {
	t.Parallel()
	d := docker.Get(t)
	args := append([]string{"--adapter", binary(t, "docker"), dockerAdapterTimeout, "--scale", dockerScale, restartElsewhere},
		dockerFixtureArgs(d)...)
	run := runCLI(t, args...)
	expectShippedOutcome(t, run)
	if want := "containerd without CRI (Docker's own): " + d.ContainerdEndpoint; !strings.Contains(run.output, want) {
		t.Errorf("output lacks %q:\n%s", want, run.output)
	}
	if notes := run.result(t, "pod-ips-match").Notes; len(notes) != 0 {
		t.Errorf("pod-ips-match notes = %q, want none: the docker adapter reports pod IPs", notes)
	}
	t.Logf("scale-listing: %v", run.result(t, "scale-listing").Notes)
}

// TestCRIAdaptersConform runs the suite against the containerd adapter
// both ways, CRI and native, reading the private containerd. The crio and
// dockershim adapters run against a real CRI-O and cri-dockerd instead
// (TestRealCRIRuntimesConform).
// The CRI fixture's plain container is a record in containerd's k8s.io
// namespace. Every check must pass; none may skip.
func TestCRIAdaptersConform(t *testing.T) {
	t.Parallel()
	c := criContainerd(t)
	d := docker.Get(t)
	cases := []struct {
		name    string
		adapter string
		args    []string
		scale   string
	}{
		{
			name: "containerd-cri", adapter: "containerd", scale: containerdScale,
			args: []string{"--adapter-arg=--cri", "--wrong-runtime-arg=--endpoint=" + d.Host},
		},
		{
			name: "containerd-native", adapter: "containerd", scale: smallScale,
			// Pod identity must come from containerd's own sandbox
			// annotations: kubelet's labels are left out.
			args: []string{"--without-pod-labels", "--wrong-runtime-arg=--endpoint=" + d.Host},
		},
	}
	runs := make(map[string][]string, len(cases))
	for _, tc := range cases {
		// Docker's own containerd is containerd without its CRI plugin.
		args := append([]string{"--adapter", binary(t, tc.adapter), "--scale", tc.scale, restartElsewhere,
			"--no-cri-endpoint=" + d.ContainerdEndpoint}, tc.args...)
		runs[tc.name] = append(args, criFixtureArgs(c)...)
	}
	results := runCLIConcurrently(t, runs)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			expectShippedOutcome(t, results[tc.name])
			t.Logf("scale-listing: %v", results[tc.name].result(t, "scale-listing").Notes)
		})
	}
}

// expectShippedOutcome requires a shipped adapter's whole run to pass
// every check but the one run elsewhere, with none skipped.
func expectShippedOutcome(t *testing.T, run cliRun) {
	t.Helper()
	expectOutcome(t, run, 0, nil, nil, []string{"runtime-restart"})
}

// TestEveryShippedAdapterMeetsEveryCheck makes sure the one check the
// whole runs leave out, runtime-restart, is run against every adapter of
// ipamd's adapter table by TestRuntimeRestart and TestRealRuntimeRestart:
// a new row without a runtime-restart case fails here.
func TestEveryShippedAdapterMeetsEveryCheck(t *testing.T) {
	t.Parallel()
	cases := map[string][]string{}
	for _, tc := range slices.Concat(dockerRestartCases("unix:///d.sock"), containerdRestartCases("unix:///c.sock"),
		crioRestartCases("unix:///o.sock"), criDockerdRestartCases("unix:///s.sock")) {
		if tc.failure == "" {
			cases[tc.adapter] = append(cases[tc.adapter], tc.name)
		}
	}
	for _, a := range config.Adapters() {
		if len(cases[a.Binary]) == 0 {
			t.Errorf("no runtime-restart case for shipped adapter %s (cases by adapter %v)", a.Name, cases)
		}
	}
}
