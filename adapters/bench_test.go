package adapters_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sandboxipam/sandboxipam/adapters/internal/adaptertest"
	"github.com/sandboxipam/sandboxipam/conformance/fixture"
	"github.com/sandboxipam/sandboxipam/runtime/plugin/host"
)

// benchPodCounts are the node sizes measured. 100 pods must list in under
// 50 ms through every adapter.
var benchPodCounts = []int{10, 100}

// BenchmarkListSandboxes lists through each adapter binary running as a
// plugin (AutoMTLS on, as ipamd runs them) against its real runtime
// holding N running pods, each with one app container. It reports the
// median and p90 of the calls (ns/op is their mean) and the adapter
// process's resident memory at rest: after launch and one Info call
// ("rss-idle-MB"), and after the measured listings ("rss-MB").
func BenchmarkListSandboxes(b *testing.B) {
	d, c := dockerd.Get(b), ctrd.Get(b)
	binaryPath(b, "docker")
	ctx := context.Background()
	dockerPods := &podSet{fixture: adaptertest.NewDockerFixture(b, ctx, d), prefix: "dkr"}
	criPods := &podSet{fixture: adaptertest.NewCRIFixture(b, ctx, c), prefix: "cri"}
	plugins := []struct {
		name, binary string
		args         []string
		pods         *podSet
	}{
		{"docker", "docker", []string{"--endpoint=" + d.Host}, dockerPods},
		{"containerd", "containerd", []string{"--endpoint=" + c.Endpoint}, criPods},
		{"containerd-cri", "containerd", []string{"--cri", "--endpoint=" + c.Endpoint}, criPods},
		{"dockershim", "dockershim", []string{"--endpoint=" + c.Endpoint, "--runtime-name=containerd"}, criPods},
		{"crio", "crio", []string{"--endpoint=" + c.Endpoint, "--runtime-name=containerd"}, criPods},
	}
	for _, count := range benchPodCounts {
		for _, p := range plugins {
			b.Run(fmt.Sprintf("%s/pods=%d", p.name, count), func(b *testing.B) {
				p.pods.grow(b, ctx, count) // here: -bench may filter this one out
				client := launch(b, p.binary, p.args...)
				if _, err := client.Info(ctx); err != nil {
					b.Fatal(err)
				}
				idle := residentMB(b, client.PID())
				benchmarkList(b, ctx, client, count)
				b.ReportMetric(idle, "rss-idle-MB")
				b.ReportMetric(residentMB(b, client.PID()), "rss-MB")
			})
		}
	}
}

func benchmarkList(b *testing.B, ctx context.Context, client *host.Client, want int) {
	var durations []time.Duration
	for b.Loop() {
		began := time.Now()
		sandboxes, err := client.ListSandboxes(ctx)
		durations = append(durations, time.Since(began))
		if err != nil {
			b.Fatal(err)
		}
		if len(sandboxes) != want {
			b.Fatalf("listed %d sandboxes, want %d", len(sandboxes), want)
		}
	}
	slices.Sort(durations)
	b.ReportMetric(float64(durations[len(durations)/2].Microseconds())/1000, "ms-median")
	b.ReportMetric(float64(durations[len(durations)*9/10].Microseconds())/1000, "ms-p90")
}

// podSet grows a runtime's pods to a count; the pods live until the
// benchmark's fixture cleanup.
type podSet struct {
	fixture fixture.Fixture
	prefix  string
	created int
}

func (s *podSet) grow(b *testing.B, ctx context.Context, count int) {
	b.Helper()
	for ; s.created < count; s.created++ {
		name := fmt.Sprintf("%s-%03d", s.prefix, s.created)
		adaptertest.CreatePod(b, ctx, s.fixture, fixture.PodSpec{
			Name: name, Namespace: "bench", UID: "uid-" + name, Containers: []string{"app"},
		})
	}
}

// residentMB reads VmRSS of a process from /proc, in MB (10^6 bytes).
func residentMB(b *testing.B, pid int) float64 {
	b.Helper()
	file, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Fatal(err)
	}
	defer file.Close()
	scanner := bufio.NewScanner(file)
	for scanner.Scan() {
		value, ok := strings.CutPrefix(scanner.Text(), "VmRSS:")
		if !ok {
			continue
		}
		fields := strings.Fields(value) // "12345 kB"
		kB, err := strconv.ParseFloat(fields[0], 64)
		if err != nil {
			b.Fatal(err)
		}
		return kB * 1024 / 1e6
	}
	b.Fatalf("no VmRSS in /proc/%d/status", pid)
	return 0
}
