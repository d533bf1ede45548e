package e2e_test

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/sandboxipam/sandboxipam/conformance"
	"github.com/sandboxipam/sandboxipam/conformance/fixture"
)

// restartCase is one adapter put through the runtime-restart check.
type restartCase struct {
	name, adapter string
	args          []string
	// failure, when set, is a phrase the check's failure must hold; the
	// check must pass otherwise.
	failure string
}

// stuckRecoveryTimeout is how long the check waits for an adapter that is
// meant never to recover: a correct one lists again within a second here.
const stuckRecoveryTimeout = 10 * time.Second

// TestRuntimeRestart stops and starts a private runtime under each adapter
// while its process stays up: calls during the outage must fail with
// ErrUnavailable, and the same process must then list the same IDs. Each
// runtime has one restart at a time, so the adapters of one runtime go one
// after another.
func TestRuntimeRestart(t *testing.T) {
	t.Parallel()
	t.Run("docker", func(t *testing.T) {
		t.Parallel()
		d := restartDocker.Get(t)
		fix, err := fixture.NewDocker(t.Context(), fixture.DockerConfig{Host: d.Host, PauseImage: d.PauseImage, CgroupParent: d.CgroupParent})
		if err != nil {
			t.Fatal(err)
		}
		cleanUpFixture(t, fix)
		controlled := fixture.WithRuntimeControl(fix, d.StopDaemon, d.StartDaemon)
		runRestartCases(t, controlled, dockerRestartCases(d.Host))
	})
	t.Run("containerd", func(t *testing.T) {
		t.Parallel()
		c := restartContainerd.Get(t)
		fix, err := fixture.NewCRI(t.Context(), fixture.CRIConfig{Endpoint: c.Endpoint, PauseImage: c.PauseImage, CgroupParent: c.CgroupParent})
		if err != nil {
			t.Fatal(err)
		}
		cleanUpFixture(t, fix)
		controlled := fixture.WithRuntimeControl(fix, c.StopDaemon, c.StartDaemon)
		runRestartCases(t, controlled, containerdRestartCases(c.Endpoint))
	})
}

// dockerRestartCases are the adapters put through a dockerd's restart:
// the shipped one, the example, and two broken ones.
func dockerRestartCases(endpoint string) []restartCase {
	args := []string{"--endpoint=" + endpoint}
	return []restartCase{
		{name: "docker", adapter: "docker", args: args},
		{name: "example", adapter: "adapter-docker-minimal", args: args},
		{name: "stuckafteroutage", adapter: "stuckafteroutage", args: args, failure: "did not list again"},
		{name: "emptyonshortdeadline", adapter: "emptyonshortdeadline", args: args,
			failure: "while the runtime was down with a 100ms deadline returned an empty list and no error"},
	}
}

// containerdRestartCases are the shipped adapters put through a
// containerd's restart: the containerd adapter both ways. The crio and
// dockershim adapters go through their own real runtimes' restarts
// (TestRealRuntimeRestart).
func containerdRestartCases(endpoint string) []restartCase {
	arg := "--endpoint=" + endpoint
	return []restartCase{
		{name: "containerd-cri", adapter: "containerd", args: []string{"--cri", arg}},
		{name: "containerd-native", adapter: "containerd", args: []string{arg}},
	}
}

// runRestartCases runs the runtime-restart check alone against each case.
func runRestartCases(t *testing.T, fix fixture.Fixture, cases []restartCase) {
	t.Helper()
	for _, tc := range cases {
		cfg := conformance.Config{
			AdapterPath: binary(t, tc.adapter),
			AdapterArgs: tc.args,
			Fixture:     fix,
			Focus:       regexp.MustCompile(`^runtime-restart$`),
		}
		if tc.failure != "" {
			cfg.RecoveryTimeout = stuckRecoveryTimeout
		}
		report, err := conformance.RunChecks(t.Context(), cfg, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(report.Results) != 1 || report.Results[0].ID != "runtime-restart" {
			t.Fatalf("%s: results %+v, want runtime-restart alone", tc.name, report.Results)
		}
		result := report.Results[0]
		t.Logf("%s: %s %s %v", tc.name, result.Status, result.Reason, result.Notes)
		switch {
		case tc.failure == "" && result.Status != conformance.StatusPass:
			t.Errorf("%s: runtime-restart %s: %s", tc.name, result.Status, conformance.FailureText(result))
		case tc.failure != "" && (result.Status != conformance.StatusFail || !strings.Contains(result.Reason, tc.failure)):
			t.Errorf("%s: runtime-restart %s (%s), want a failure saying %q", tc.name, result.Status, result.Reason, tc.failure)
		}
	}
}

// cleanUpFixture removes what fix created when the test ends. Its bound
// only stops a hang: under CI's make test, force-removing one pod's
// containers on a shared dockerd has taken over a minute.
func cleanUpFixture(t testing.TB, fix interface {
	fixture.Fixture
	Close() error
}) {
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		if err := fix.Cleanup(ctx); err != nil {
			t.Errorf("fixture clean-up: %v", err)
		}
		_ = fix.Close()
	})
}
