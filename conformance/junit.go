package conformance

import (
	"encoding/xml"
	"fmt"
	"io"
	"strings"
	"time"
)

// junitSuites is the root of a JUnit XML report, in the schema Jenkins,
// GitLab and GitHub's test reporters read.
type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Skipped  int          `xml:"skipped,attr"`
	Time     string       `xml:"time,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name       string          `xml:"name,attr"`
	Tests      int             `xml:"tests,attr"`
	Failures   int             `xml:"failures,attr"`
	Errors     int             `xml:"errors,attr"`
	Skipped    int             `xml:"skipped,attr"`
	Time       string          `xml:"time,attr"`
	Timestamp  string          `xml:"timestamp,attr"`
	Properties []junitProperty `xml:"properties>property"`
	Cases      []junitCase     `xml:"testcase"`
	SystemOut  string          `xml:"system-out,omitempty"`
}

type junitProperty struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      string        `xml:"time,attr"`
	Failure   *junitMessage `xml:"failure"`
	Skipped   *junitMessage `xml:"skipped"`
	SystemOut string        `xml:"system-out,omitempty"`
}

type junitMessage struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr,omitempty"`
	Body    string `xml:",chardata"`
}

// junitSuiteName names the suite in JUnit reports.
const junitSuiteName = "sandboxipam-conformance"

// WriteJUnit writes the report as JUnit XML: one testcase per check, named
// by its ID; a failure carries the rule, the expected and the actual value.
func WriteJUnit(w io.Writer, report Report) error {
	passed, failed, skipped := report.Counts()
	seconds := formatSeconds(report.Seconds)
	suite := junitSuite{
		Name: junitSuiteName, Tests: passed + failed + skipped, Failures: failed, Skipped: skipped,
		Time: seconds, Timestamp: report.StartedAt.UTC().Format(time.RFC3339),
		Properties: []junitProperty{
			{Name: "adapter", Value: report.Adapter},
			{Name: "adapter_args", Value: strings.Join(report.AdapterArgs, " ")},
			{Name: "fixture", Value: report.Fixture},
			{Name: "runtime", Value: strings.TrimSpace(report.Info.RuntimeName + " " + report.Info.RuntimeVersion)},
		},
	}
	for _, result := range report.Results {
		suite.Cases = append(suite.Cases, junitCaseOf(result))
	}
	if b := report.Benchmark; b != nil {
		// Figures, not verdicts: properties and output, no testcase.
		suite.Properties = append(suite.Properties, benchmarkProperties(b)...)
		suite.SystemOut = FormatBenchmark(b)
	}
	root := junitSuites{Name: junitSuiteName, Tests: suite.Tests, Failures: failed, Skipped: skipped,
		Time: seconds, Suites: []junitSuite{suite}}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return fmt.Errorf("write JUnit report: %w", err)
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(root); err != nil {
		return fmt.Errorf("encode JUnit report: %w", err)
	}
	_, err := io.WriteString(w, "\n")
	return err
}

// junitCaseOf converts one result.
func junitCaseOf(r Result) junitCase {
	c := junitCase{Name: r.ID, Classname: junitSuiteName, Time: formatSeconds(r.Seconds),
		SystemOut: strings.Join(r.Notes, "\n")}
	switch r.Status {
	case StatusFail:
		body := fmt.Sprintf("%s\n%s\n%s", r.Statement, r.Rule, failureText(r))
		c.Failure = &junitMessage{Message: r.Reason, Type: "ConformanceFailure", Body: body}
	case StatusSkip:
		c.Skipped = &junitMessage{Message: r.Reason}
	}
	return c
}

// formatSeconds formats a duration in seconds as JUnit expects.
func formatSeconds(seconds float64) string {
	return fmt.Sprintf("%.3f", seconds)
}

// benchmarkProperties are the benchmark's figures as JUnit properties.
func benchmarkProperties(b *Benchmark) []junitProperty {
	props := []junitProperty{
		{Name: "benchmark.pods", Value: fmt.Sprint(b.Pods)},
		{Name: "benchmark.listed", Value: fmt.Sprint(b.Listed)},
		{Name: "benchmark.adapter_rss_bytes", Value: fmt.Sprint(b.AdapterRSSBytes)},
		{Name: "benchmark.adapter_peak_rss_bytes", Value: fmt.Sprint(b.AdapterPeakRSSBytes)},
	}
	for _, l := range []struct {
		name string
		lat  Latency
	}{{"list_sandboxes", b.ListSandboxes}, {"get_sandbox", b.GetSandbox}} {
		props = append(props,
			junitProperty{Name: "benchmark." + l.name + ".calls", Value: fmt.Sprint(l.lat.Calls)},
			junitProperty{Name: "benchmark." + l.name + ".p50_ms", Value: fmt.Sprintf("%.3f", l.lat.P50)},
			junitProperty{Name: "benchmark." + l.name + ".p90_ms", Value: fmt.Sprintf("%.3f", l.lat.P90)},
			junitProperty{Name: "benchmark." + l.name + ".p99_ms", Value: fmt.Sprintf("%.3f", l.lat.P99)},
			junitProperty{Name: "benchmark." + l.name + ".max_ms", Value: fmt.Sprintf("%.3f", l.lat.Max)})
	}
	if b.Error != "" {
		props = append(props, junitProperty{Name: "benchmark.error", Value: b.Error})
	}
	return props
}
