package e2e_test

import (
	"encoding/xml"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sync/errgroup"

	"github.com/sandboxipam/sandboxipam/conformance"
	"github.com/sandboxipam/sandboxipam/conformance/fixture"
)

// TestBenchmarkReport runs `conformance run --benchmark` with a few pods
// and requires the figures in the text, JSON and JUnit reports, with no
// check run and no verdict. It asserts no timing: the figures for
// BENCHMARKS.md come from BenchmarkConformanceMode. It runs the crio
// adapter against the shared real CRI-O: a CRI listing is one call, where
// the docker adapter inspects every container on the shared dockerd, 250
// times over, while the other tests start and remove theirs.
func TestBenchmarkReport(t *testing.T) {
	t.Parallel()
	c := crio.Get(t)
	args := append([]string{"--adapter", binary(t, "crio"), "--benchmark", "--scale", "3",
		"--namespace", "conformance-benchmark"}, realFixtureArgs(c.Endpoint, c.PauseImage, c.CgroupParent)...)
	run := runCLI(t, args...)
	b := run.report.Benchmark
	switch {
	case run.exitCode != 0:
		t.Errorf("exit code %d, want 0\n%s", run.exitCode, run.output)
	case len(run.report.Results) != 0:
		t.Errorf("benchmark mode ran %d checks, want none", len(run.report.Results))
	case b == nil:
		t.Fatalf("JSON report has no benchmark:\n%s", run.output)
	}
	if b.Pods != 3 || b.Listed < 3 || b.Error != "" {
		t.Errorf("benchmark pods=%d listed=%d error=%q, want 3 created, at least 3 listed, no error", b.Pods, b.Listed, b.Error)
	}
	if b.ListSandboxes.Calls != 50 || b.GetSandbox.Calls != 200 || b.ListSandboxes.P50 <= 0 || b.GetSandbox.Max < b.GetSandbox.P50 {
		t.Errorf("latencies %+v / %+v, want 50 and 200 calls with ordered percentiles", b.ListSandboxes, b.GetSandbox)
	}
	if b.AdapterRSSBytes <= 0 || b.AdapterPeakRSSBytes < b.AdapterRSSBytes {
		t.Errorf("adapter RSS %d, peak %d, want both read from /proc", b.AdapterRSSBytes, b.AdapterPeakRSSBytes)
	}
	for _, want := range []string{"benchmark (no pass or fail): 3 pods created", "ListSandboxes: p50", "adapter RSS:"} {
		if !strings.Contains(run.output, want) {
			t.Errorf("text report lacks %q:\n%s", want, run.output)
		}
	}
	if strings.Contains(run.output, "CONFORMANT") {
		t.Errorf("benchmark mode gave a verdict:\n%s", run.output)
	}
}

// TestBenchmarkJUnitHasFiguresNoVerdict checks the JUnit form of a
// benchmark report: suite properties and output, no testcase.
func TestBenchmarkJUnitHasFiguresNoVerdict(t *testing.T) {
	t.Parallel()
	report := conformance.Report{Adapter: "a", Benchmark: &conformance.Benchmark{Pods: 2, Listed: 2,
		ListSandboxes: conformance.Latency{Calls: 50, P50: 1.5, P90: 2, P99: 3, Max: 4}, AdapterRSSBytes: 1 << 20, AdapterPeakRSSBytes: 2 << 20}}
	path := filepath.Join(t.TempDir(), "b.xml")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := conformance.WriteJUnit(f, report); err != nil {
		t.Fatal(err)
	}
	f.Close()
	data, _ := os.ReadFile(path)
	var parsed struct {
		Tests  int `xml:"tests,attr"`
		Suites []struct {
			Cases      []struct{} `xml:"testcase"`
			Properties []struct {
				Name  string `xml:"name,attr"`
				Value string `xml:"value,attr"`
			} `xml:"properties>property"`
			SystemOut string `xml:"system-out"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal(data, &parsed); err != nil {
		t.Fatal(err)
	}
	props := map[string]string{}
	for _, p := range parsed.Suites[0].Properties {
		props[p.Name] = p.Value
	}
	if parsed.Tests != 0 || len(parsed.Suites[0].Cases) != 0 || props["benchmark.list_sandboxes.p50_ms"] != "1.500" ||
		props["benchmark.adapter_rss_bytes"] != "1048576" || !strings.Contains(parsed.Suites[0].SystemOut, "p90 2.00 ms") {
		t.Errorf("JUnit benchmark report:\n%s", data)
	}
}

// benchScale is the pod count of BenchmarkConformanceMode: the scale
// check's default size.
const benchScale = conformance.DefaultScale

// BenchmarkConformanceMode produces the figures of BENCHMARKS.md: it puts
// benchScale pods in each private runtime once, then runs `conformance run
// --benchmark` against every shipped adapter in turn (one at a time, so
// their figures do not share the machine with each other) and logs each
// report's figures. Run it alone:
//
//	go test -run '^$' -bench ConformanceMode -benchtime 1x -v ./conformance/e2e/
func BenchmarkConformanceMode(b *testing.B) {
	d := restartDocker.Get(b)
	c := restartContainerd.Get(b)
	dockerFix, err := fixture.NewDocker(b.Context(), fixture.DockerConfig{Host: d.Host, PauseImage: d.PauseImage, CgroupParent: d.CgroupParent,
		PodAddresses: mustPrefix(podCIDR)})
	if err != nil {
		b.Fatal(err)
	}
	criFix, err := fixture.NewCRI(b.Context(), fixture.CRIConfig{Endpoint: c.Endpoint, PauseImage: c.PauseImage, CgroupParent: c.CgroupParent})
	if err != nil {
		b.Fatal(err)
	}
	o, sd := restartCRIO.Get(b), restartCRIDockerd.Get(b)
	crioFix, err := fixture.NewCRI(b.Context(), fixture.CRIConfig{Endpoint: o.Endpoint, PauseImage: o.PauseImage, CgroupParent: o.CgroupParent})
	if err != nil {
		b.Fatal(err)
	}
	shimFix, err := fixture.NewCRI(b.Context(), fixture.CRIConfig{Endpoint: sd.Endpoint, PauseImage: sd.PauseImage, CgroupParent: sd.CgroupParent})
	if err != nil {
		b.Fatal(err)
	}
	for _, fix := range []interface {
		fixture.Fixture
		Close() error
	}{dockerFix, criFix, crioFix, shimFix} {
		cleanUpFixture(b, fix)
		createBenchPods(b, fix)
	}
	cases := []struct {
		name, adapter string
		args          []string
	}{
		{"docker", "docker", []string{"--fixture", "docker", "--endpoint", d.Host}},
		{"containerd-native", "containerd", []string{"--fixture", "cri", "--endpoint", c.Endpoint}},
		{"containerd-cri", "containerd", []string{"--adapter-arg=--cri", "--fixture", "cri", "--endpoint", c.Endpoint}},
		{"dockershim (real cri-dockerd)", "dockershim", []string{"--fixture", "cri", "--endpoint", sd.Endpoint}},
		{"crio (real CRI-O)", "crio", []string{"--fixture", "cri", "--endpoint", o.Endpoint}},
	}
	for range b.N {
		for _, tc := range cases {
			run := runCLI(b, append([]string{"--adapter", binary(b, tc.adapter), "--benchmark", "--scale", "0"}, tc.args...)...)
			bm := run.report.Benchmark
			if run.exitCode != 0 || bm == nil || bm.Error != "" {
				b.Fatalf("%s: exit %d\n%s", tc.name, run.exitCode, run.output)
			}
			b.Logf("| %s | %d | %.2f / %.2f / %.2f ms | %.2f / %.2f / %.2f ms | %.1f MiB (peak %.1f) |", tc.name, bm.Listed,
				bm.ListSandboxes.P50, bm.ListSandboxes.P90, bm.ListSandboxes.P99, bm.GetSandbox.P50, bm.GetSandbox.P90, bm.GetSandbox.P99,
				float64(bm.AdapterRSSBytes)/(1<<20), float64(bm.AdapterPeakRSSBytes)/(1<<20))
		}
	}
}

// createBenchPods creates benchScale pods without app containers, as the
// scale check does, eight at a time; the fixture's clean-up removes them.
func createBenchPods(b *testing.B, fix fixture.Fixture) {
	b.Helper()
	var g errgroup.Group
	g.SetLimit(conformance.DefaultCreateParallelism)
	for i := range benchScale {
		g.Go(func() error {
			_, err := fix.CreatePod(b.Context(), fixture.PodSpec{Name: fmt.Sprintf("bench-%d", i), Namespace: "conformance-benchmark",
				UID: fmt.Sprintf("00000000-0000-4000-8000-%012d", i)})
			return err
		})
	}
	if err := g.Wait(); err != nil {
		b.Fatal(err)
	}
}

// mustPrefix parses a CIDR the test itself wrote.
func mustPrefix(cidr string) netip.Prefix {
	return netip.MustParsePrefix(cidr)
}
