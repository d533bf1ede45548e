package conformance

import (
	"errors"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/sandboxipam/sandboxipam/runtime/plugin/host"
)

// recorder is a Reporter that keeps what it is told.
type recorder struct{ finished []Result }

func (r *recorder) CheckStarted(Check)          {}
func (r *recorder) CheckFinished(result Result) { r.finished = append(r.finished, result) }

func TestRunChecksReportsAnAdapterThatDoesNotStart(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "no-such-adapter")
	var rec recorder
	report, err := RunChecks(t.Context(), Config{AdapterPath: missing, Focus: regexp.MustCompile(`^sandbox-id-exact$|^scale`)}, &rec)
	if err != nil {
		t.Fatal(err)
	}
	if len(report.Results) != 3 || len(rec.finished) != 3 {
		t.Fatalf("results = %+v; reporter saw %d", report.Results, len(rec.finished))
	}
	launch := report.Results[0]
	if launch.ID != LaunchCheckID || launch.Status != StatusFail || !strings.Contains(launch.Reason, host.ErrBinaryNotFound.Error()) {
		t.Errorf("launch result = %+v", launch)
	}
	for _, r := range report.Results[1:] {
		if r.Status != StatusSkip || r.Reason != "the adapter did not start" {
			t.Errorf("%s = %s %q, want skip", r.ID, r.Status, r.Reason)
		}
	}
	if !report.Failed() || report.Fixture != "none" {
		t.Errorf("Failed() = %t, Fixture = %q", report.Failed(), report.Fixture)
	}
}

func TestRunChecksRejectsAnInvalidConfig(t *testing.T) {
	if _, err := RunChecks(t.Context(), Config{}, nil); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("RunChecks(Config{}) = %v, want ErrInvalidConfig", err)
	}
}
