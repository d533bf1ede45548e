package e2e_test

import (
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/sandboxipam/sandboxipam/conformance"
	"github.com/sandboxipam/sandboxipam/internal/testenv"
)

// cliRun is what one run of the conformance binary produced.
type cliRun struct {
	exitCode int
	report   conformance.Report
	output   string
}

// runCLIConcurrently runs the conformance binary once per entry of runs
// (name to arguments), as many at once as runSlots allows.
func runCLIConcurrently(t *testing.T, runs map[string][]string) map[string]cliRun {
	t.Helper()
	binary(t, "conformance") // build once, before the goroutines
	results := make(map[string]cliRun, len(runs))
	var mu sync.Mutex
	var wg sync.WaitGroup
	for name, args := range runs {
		wg.Go(func() {
			run, err := runCLIOnce(t, args)
			if err != nil {
				run.output = fmt.Sprintf("%v\n%s", err, run.output)
			}
			mu.Lock()
			defer mu.Unlock()
			results[name] = run
		})
	}
	wg.Wait()
	return results
}

// runCLI runs `conformance run --json FILE args...` and parses the report.
func runCLI(t testing.TB, args ...string) cliRun {
	t.Helper()
	run, err := runCLIOnce(t, args)
	if err != nil {
		t.Fatal(err)
	}
	return run
}

// runSlots bounds the conformance runs in flight across the package's
// parallel tests. Each run creates its pods eight at a time, and container
// creation is CPU work (runc, the shims, the CNI plugins), not waiting:
// unbounded, the broken-adapter test alone started all its runs at once
// and the load average on two cores reached 50. Two at a time the package
// takes no longer, and conformance/fixture, which make test runs beside
// it, took 113 s instead of 391 (BENCHMARKS.md, "make test wall time").
var runSlots = make(chan struct{}, 2)

// runCLIOnce runs the conformance binary and parses its JSON report. It
// calls no t.Fatal, so goroutines may use it.
func runCLIOnce(t testing.TB, args []string) (cliRun, error) {
	runSlots <- struct{}{}
	defer func() { <-runSlots }()
	dir := t.TempDir()
	jsonPath, junitPath := filepath.Join(dir, "report.json"), filepath.Join(dir, "report.xml")
	cmd := exec.CommandContext(t.Context(), binary(t, "conformance"),
		append([]string{"run", "--json", jsonPath, "--junit", junitPath}, args...)...)
	out, err := cmd.CombinedOutput()
	run := cliRun{output: string(out)}
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		run.exitCode = exit.ExitCode()
	case err != nil:
		return run, fmt.Errorf("run conformance: %w\n%s", err, out)
	}
	data, err := os.ReadFile(jsonPath)
	if err != nil {
		return run, fmt.Errorf("read the JSON report: %w\noutput:\n%s", err, out)
	}
	if err := json.Unmarshal(data, &run.report); err != nil {
		return run, fmt.Errorf("parse the JSON report: %w\n%s", err, data)
	}
	return run, checkJUnit(junitPath, run.report)
}

// junitReport is the part of a JUnit XML file the tests compare.
type junitReport struct {
	Failures int `xml:"failures,attr"`
	Suites   []struct {
		Cases []struct {
			Name    string    `xml:"name,attr"`
			Failure *struct{} `xml:"failure"`
		} `xml:"testcase"`
	} `xml:"testsuite"`
}

// checkJUnit requires the JUnit file to parse and to hold one testcase per
// check of the JSON report, failed where the report says so.
func checkJUnit(path string, report conformance.Report) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("read the JUnit report: %w", err)
	}
	var parsed junitReport
	if err := xml.Unmarshal(data, &parsed); err != nil {
		return fmt.Errorf("parse the JUnit report: %w\n%s", err, data)
	}
	_, failed, _ := report.Counts()
	if len(parsed.Suites) != 1 || len(parsed.Suites[0].Cases) != len(report.Results) || parsed.Failures != failed {
		return fmt.Errorf("JUnit report does not match the JSON report (%d results, %d failed):\n%s", len(report.Results), failed, data)
	}
	for i, c := range parsed.Suites[0].Cases {
		if want := report.Results[i]; c.Name != want.ID || (c.Failure != nil) != (want.Status == conformance.StatusFail) {
			return fmt.Errorf("JUnit testcase %d is %s (failed %t), the JSON report's is %s (%s)", i, c.Name, c.Failure != nil, want.ID, want.Status)
		}
	}
	return nil
}

// idsWithStatus returns the IDs of the checks that ended in status, sorted.
func (r cliRun) idsWithStatus(status conformance.Status) []string {
	var ids []string
	for _, result := range r.report.Results {
		if result.Status == status {
			ids = append(ids, result.ID)
		}
	}
	slices.Sort(ids)
	return ids
}

// result returns the result of the check with id.
func (r cliRun) result(t *testing.T, id string) conformance.Result {
	t.Helper()
	for _, result := range r.report.Results {
		if result.ID == id {
			return result
		}
	}
	t.Fatalf("no result for check %s in the report", id)
	return conformance.Result{}
}

// expectOutcome requires the exit code, and exactly the failing and skipped
// check IDs given; every other check but those left out (--skip) must have
// passed.
func expectOutcome(t *testing.T, run cliRun, exitCode int, failing, skipped, leftOut []string) {
	t.Helper()
	slices.Sort(failing)
	slices.Sort(skipped)
	if run.exitCode != exitCode {
		t.Errorf("exit code = %d, want %d", run.exitCode, exitCode)
	}
	if got := run.idsWithStatus(conformance.StatusFail); !slices.Equal(got, failing) {
		t.Errorf("failing checks = %v, want %v", got, failing)
	}
	if got := run.idsWithStatus(conformance.StatusSkip); !slices.Equal(got, skipped) {
		t.Errorf("skipped checks = %v, want %v", got, skipped)
	}
	var want, reported []string
	for _, check := range conformance.Checks() {
		if !slices.Contains(leftOut, check.ID) {
			want = append(want, check.ID)
		}
	}
	for _, result := range run.report.Results {
		reported = append(reported, result.ID)
	}
	if !slices.Equal(reported, want) {
		t.Errorf("reported checks = %v, want %v", reported, want)
	}
	if t.Failed() {
		t.Logf("conformance output:\n%s", run.output)
	}
}

// expectFocusedOutcome checks a run that selected only the checks in
// focus: exit status 1, exactly those checks reported, failing among them
// failed and the rest passed.
func expectFocusedOutcome(t *testing.T, run cliRun, focus, failing []string) {
	t.Helper()
	focus, failing = slices.Sorted(slices.Values(focus)), slices.Sorted(slices.Values(failing))
	if run.exitCode != 1 {
		t.Errorf("exit code = %d, want 1", run.exitCode)
	}
	var reported []string
	for _, result := range run.report.Results {
		reported = append(reported, result.ID)
	}
	if slices.Sort(reported); !slices.Equal(reported, focus) {
		t.Errorf("reported checks = %v, want the focused %v", reported, focus)
	}
	if got := run.idsWithStatus(conformance.StatusFail); !slices.Equal(got, failing) {
		t.Errorf("failing checks = %v, want %v", got, failing)
	}
	if got := run.idsWithStatus(conformance.StatusSkip); len(got) != 0 {
		t.Errorf("skipped checks = %v, want none", got)
	}
	if t.Failed() {
		t.Logf("conformance output:\n%s", run.output)
	}
}

// podCIDR is where the docker fixture takes its pods' addresses from, for
// pod-ips-match; they live only in the pods' own network namespaces.
const podCIDR = "198.18.128.0/17"

// The runs against the one dockerd the package's tests share bound each
// adapter call by two minutes, the runner's --timeout and the shipped docker
// adapter's own (defaults 30 s and 10 s). A docker adapter's listing
// inspects every sandbox on the node, and an inspect waits for the lock of
// a container that another run is starting or removing: with the machine
// at load average 30-40, one listing took more than 30 s. The checks whose
// point is a short bound (deadline-short, deadline-hung-runtime) set their
// own; these bounds only stop a hung run.
const (
	sharedDockerCallTimeout = "--timeout=2m"
	dockerAdapterTimeout    = "--adapter-arg=--timeout=2m"
)

// dockerFixtureArgs are the flags that point the runner's docker fixture
// and the adapter at the private dockerd.
func dockerFixtureArgs(d *testenv.Docker) []string {
	return []string{"--fixture", "docker", "--endpoint", d.Host, "--pause-image", d.PauseImage, "--cgroup-parent", d.CgroupParent,
		"--pod-cidr", podCIDR + "," + podCIDR6, sharedDockerCallTimeout}
}

// criFixtureArgs point the runner's CRI fixture and the adapter at a
// private containerd (the package's shared one: criContainerd).
func criFixtureArgs(c *testenv.Containerd) []string {
	return []string{"--fixture", "cri", "--endpoint", c.Endpoint, "--pause-image", c.PauseImage, "--cgroup-parent", c.CgroupParent}
}
