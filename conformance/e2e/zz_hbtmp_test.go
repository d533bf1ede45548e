package e2e_test

import "testing"

func TestHBTmpNoCRI(t *testing.T) {
	d := docker.Get(t)
	runs := map[string][]string{}
	for _, a := range []string{"docker", "containerd", "dockershim", "crio"} {
		runs[a] = []string{"--adapter", binary(t, a), "--focus", "containerd-without-cri", "--no-cri-endpoint=" + d.ContainerdEndpoint}
	}
	runs["containerd-cri"] = []string{"--adapter", binary(t, "containerd"), "--adapter-arg=--cri", "--focus", "containerd-without-cri", "--no-cri-endpoint=" + d.ContainerdEndpoint}
	runs["seedbug"] = []string{"--adapter", binary(t, "seedbug"), "--focus", "containerd-without-cri", "--no-cri-endpoint=" + d.ContainerdEndpoint}
	res := runCLIConcurrently(t, runs)
	for name, r := range res {
		for _, x := range r.report.Results {
			t.Logf("%s: exit %d %s %s %s %s %v", name, r.exitCode, x.ID, x.Status, x.Reason, x.Actual, x.Notes)
		}
	}
}
