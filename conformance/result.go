package conformance

import (
	"errors"
	"fmt"
	"time"

	"github.com/sandboxipam/sandboxipam/runtime"
)

// Status is a check's outcome.
type Status string

// The outcomes a check can have.
const (
	StatusPass Status = "pass"
	StatusFail Status = "fail"
	StatusSkip Status = "skip"
)

// Result is one check's outcome, as the report shows it.
type Result struct {
	ID        string `json:"id"`
	Rule      string `json:"rule"`
	Statement string `json:"statement"`
	Status    Status `json:"status"`
	// Reason says why a check failed or was skipped.
	Reason string `json:"reason,omitempty"`
	// Expected and Actual are set for a failure that compares values.
	Expected string `json:"expected,omitempty"`
	Actual   string `json:"actual,omitempty"`
	// Notes are facts worth reading even when the check passed, such as
	// how long the scale check's listing took, or a clean-up that failed.
	Notes   []string `json:"notes,omitempty"`
	Seconds float64  `json:"seconds"`
}

// Report is the outcome of one run of the suite.
type Report struct {
	Adapter     string       `json:"adapter"`
	AdapterArgs []string     `json:"adapter_args,omitempty"`
	Fixture     string       `json:"fixture"`
	Info        runtime.Info `json:"info"`
	StartedAt   time.Time    `json:"started_at"`
	Seconds     float64      `json:"seconds"`
	// Interrupted is true when the run's context ended before every check
	// ran; the checks that did not run are skipped with that reason.
	Interrupted bool     `json:"interrupted,omitempty"`
	Results     []Result `json:"results"`
	// Benchmark is set in benchmark mode (Config.Benchmark), which runs no
	// checks.
	Benchmark *Benchmark `json:"benchmark,omitempty"`
}

// Counts returns how many checks passed, failed and were skipped.
func (r Report) Counts() (passed, failed, skipped int) {
	for _, res := range r.Results {
		switch res.Status {
		case StatusPass:
			passed++
		case StatusFail:
			failed++
		case StatusSkip:
			skipped++
		}
	}
	return passed, failed, skipped
}

// Failed reports whether any check failed.
func (r Report) Failed() bool {
	_, failed, _ := r.Counts()
	return failed > 0
}

// Failure is a check's verdict that the adapter broke a rule. Checks return
// it (wrapped or not); anything else a check returns is also a failure, with
// only a reason.
type Failure struct {
	Message  string
	Expected string
	Actual   string
}

// Error returns the message with the expected and actual values.
func (f *Failure) Error() string {
	if f.Expected == "" && f.Actual == "" {
		return f.Message
	}
	return fmt.Sprintf("%s (expected %s, actual %s)", f.Message, f.Expected, f.Actual)
}

// failf builds a Failure with only a message.
func failf(format string, args ...any) *Failure {
	return &Failure{Message: fmt.Sprintf(format, args...)}
}

// mismatch builds a Failure comparing two values.
func mismatch(message, expected, actual string) *Failure {
	return &Failure{Message: message, Expected: expected, Actual: actual}
}

// prefixed puts prefix in front of err's message, keeping a Failure a
// Failure so that its expected and actual values reach the report.
func prefixed(prefix string, err error) error {
	if err == nil {
		return nil
	}
	var failure *Failure
	if errors.As(err, &failure) {
		return &Failure{Message: prefix + ": " + failure.Message, Expected: failure.Expected, Actual: failure.Actual}
	}
	return fmt.Errorf("%s: %w", prefix, err)
}

// skipError is how a check says it cannot run here.
type skipError struct{ reason string }

func (s *skipError) Error() string { return "skipped: " + s.reason }

// skipf skips a check with a reason.
func skipf(format string, args ...any) error {
	return &skipError{reason: fmt.Sprintf(format, args...)}
}

// resultOf turns what a check returned into the Status, Reason, Expected
// and Actual fields of r.
func resultOf(r Result, err error) Result {
	var skip *skipError
	var failure *Failure
	switch {
	case err == nil:
		r.Status = StatusPass
	case errors.As(err, &skip):
		r.Status, r.Reason = StatusSkip, skip.reason
	case errors.As(err, &failure):
		r.Status, r.Reason = StatusFail, failure.Message
		r.Expected, r.Actual = failure.Expected, failure.Actual
	default:
		r.Status, r.Reason = StatusFail, err.Error()
	}
	return r
}
