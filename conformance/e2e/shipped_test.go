package e2e_test

import (
	"testing"
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

// TestDockerAdapterConforms runs the whole suite against the shipped
// docker adapter with the docker fixture. With containerd's socket as the
// wrong runtime, every check must pass.
func TestDockerAdapterConforms(t *testing.T) {
	t.Parallel()
	d := docker.Get(t)
	c := containerd.Get(t)
	args := append([]string{"--adapter", binary(t, "docker"), dockerAdapterTimeout, "--scale", dockerScale,
		"--wrong-runtime-arg=--endpoint=" + c.Endpoint, "--no-cri-endpoint=" + d.ContainerdEndpoint}, dockerFixtureArgs(d)...)
	run := runCLI(t, args...)
	expectOutcome(t, run, 0, nil, []string{"runtime-restart"})
	if notes := run.result(t, "pod-ips-match").Notes; len(notes) != 0 {
		t.Errorf("pod-ips-match notes = %q, want none: the docker adapter reports pod IPs", notes)
	}
	t.Logf("scale-listing: %v", run.result(t, "scale-listing").Notes)
}

// TestCRIAdaptersConform runs the suite against every CRI-speaking adapter
// and the native containerd adapter, all reading the private containerd.
// A CRI runtime has no plain containers, so no-plain-containers skips.
func TestCRIAdaptersConform(t *testing.T) {
	t.Parallel()
	c := containerd.Get(t)
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
		{
			name: "dockershim", adapter: "dockershim", scale: smallScale,
			args: []string{"--adapter-arg=--runtime-name=containerd", "--wrong-runtime-arg=--runtime-name=docker"},
		},
		{
			name: "crio", adapter: "crio", scale: smallScale,
			args: []string{"--adapter-arg=--runtime-name=containerd", "--wrong-runtime-arg=--runtime-name=cri-o"},
		},
	}
	runs := make(map[string][]string, len(cases))
	for _, tc := range cases {
		// Docker's own containerd is containerd without its CRI plugin.
		args := append([]string{"--adapter", binary(t, tc.adapter), "--scale", tc.scale,
			"--no-cri-endpoint=" + d.ContainerdEndpoint}, tc.args...)
		runs[tc.name] = append(args, criFixtureArgs(c)...)
	}
	results := runCLIConcurrently(t, runs)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			expectOutcome(t, results[tc.name], 0, nil, []string{"no-plain-containers", "runtime-restart"})
			t.Logf("scale-listing: %v", results[tc.name].result(t, "scale-listing").Notes)
		})
	}
}
