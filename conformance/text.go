package conformance

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
)

// TextReporter prints each check's result as it finishes, in the form
// the runner frames with FormatHeader and FormatSummary. It is safe for
// concurrent use.
type TextReporter struct {
	mu sync.Mutex
	w  io.Writer
}

// NewTextReporter returns a TextReporter writing to w.
func NewTextReporter(w io.Writer) *TextReporter {
	return &TextReporter{w: w}
}

// CheckStarted prints nothing: a check's line appears when it finishes.
func (r *TextReporter) CheckStarted(Check) {}

// CheckFinished prints the result.
func (r *TextReporter) CheckFinished(result Result) {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, _ = io.WriteString(r.w, formatResult(result))
}

// FormatHeader says what was tested.
func FormatHeader(report Report) string {
	var b strings.Builder
	fmt.Fprintf(&b, "adapter: %s %s\n", report.Adapter, strings.Join(report.AdapterArgs, " "))
	info := report.Info
	if info.AdapterName != "" || info.RuntimeName != "" {
		fmt.Fprintf(&b, "reports: adapter %s %s, runtime %s %s at %s\n",
			info.AdapterName, info.AdapterVersion, info.RuntimeName, info.RuntimeVersion, info.Endpoint)
	}
	fmt.Fprintf(&b, "fixture: %s\n\n", report.Fixture)
	return b.String()
}

// formatResult is one check's block: a status line, then the rule, reason,
// expected and actual values and notes, indented.
func formatResult(r Result) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-4s  %-30s %s (%.2fs)\n", strings.ToUpper(string(r.Status)), r.ID, r.Statement, r.Seconds)
	const indent = "      "
	if r.Status == StatusFail {
		fmt.Fprintf(&b, "%srule:     %s\n", indent, r.Rule)
	}
	if r.Reason != "" {
		fmt.Fprintf(&b, "%sreason:   %s\n", indent, r.Reason)
	}
	if r.Expected != "" || r.Actual != "" {
		fmt.Fprintf(&b, "%sexpected: %s\n%sactual:   %s\n", indent, r.Expected, indent, r.Actual)
	}
	for _, note := range r.Notes {
		fmt.Fprintf(&b, "%snote:     %s\n", indent, note)
	}
	return b.String()
}

// FormatSummary counts the results and gives the verdict; in benchmark
// mode it gives the figures instead.
func FormatSummary(report Report) string {
	if report.Benchmark != nil {
		return "\n" + FormatBenchmark(report.Benchmark)
	}
	passed, failed, skipped := report.Counts()
	verdict := "CONFORMANT"
	switch {
	case failed > 0:
		verdict = "NOT CONFORMANT"
	case report.Interrupted:
		verdict = "INTERRUPTED"
	case skipped > 0:
		verdict = "CONFORMANT for the checks that ran; skipped checks prove nothing"
	}
	return fmt.Sprintf("\n%d checks: %d passed, %d failed, %d skipped in %.1fs: %s\n",
		len(report.Results), passed, failed, skipped, report.Seconds, verdict)
}

// WriteJSON writes the report as indented JSON.
func WriteJSON(w io.Writer, report Report) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(report); err != nil {
		return fmt.Errorf("encode report as JSON: %w", err)
	}
	return nil
}
