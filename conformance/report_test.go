package conformance

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"strings"
	"testing"
	"time"

	"github.com/sandboxipam/sandboxipam/runtime"
)

// sampleReport has one result of each status.
func sampleReport() Report {
	return Report{
		Adapter:     "/opt/adapters/docker",
		AdapterArgs: []string{"--endpoint=unix:///run/docker.sock"},
		Fixture:     "docker",
		Info:        runtime.Info{AdapterName: "docker", RuntimeName: "docker", RuntimeVersion: "20.10.24"},
		StartedAt:   time.Date(2026, 12, 2, 11, 0, 0, 0, time.UTC),
		Seconds:     12.5,
		Results: []Result{
			{ID: "sandbox-id-exact", Rule: rule1, Statement: "listed under its ID", Status: StatusFail,
				Reason: "pod p: listed ID looks like a short ID (12 characters)", Expected: testSandboxID,
				Actual: testSandboxID[:12], Seconds: 1.25},
			{ID: "no-plain-containers", Rule: rule4, Statement: "plain never listed", Status: StatusSkip,
				Reason: "plain containers not supported by the cri fixture"},
			{ID: "scale-listing", Rule: rule1, Statement: "all listed", Status: StatusPass,
				Notes: []string{"created 200 pods in 41s"}, Seconds: 60},
		},
	}
}

func TestWriteJUnitIsValidWithOneTestcasePerCheck(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteJUnit(&buf, sampleReport()); err != nil {
		t.Fatal(err)
	}
	var parsed junitSuites
	if err := xml.Unmarshal(buf.Bytes(), &parsed); err != nil {
		t.Fatalf("JUnit output does not parse: %v\n%s", err, buf.String())
	}
	if parsed.Tests != 3 || parsed.Failures != 1 || parsed.Skipped != 1 || parsed.Time != "12.500" {
		t.Errorf("testsuites tests=%d failures=%d skipped=%d time=%s, want 3 1 1 12.500",
			parsed.Tests, parsed.Failures, parsed.Skipped, parsed.Time)
	}
	cases := parsed.Suites[0].Cases
	if len(cases) != 3 || cases[0].Name != "sandbox-id-exact" || cases[2].Name != "scale-listing" {
		t.Fatalf("testcases = %+v", cases)
	}
	failure := cases[0].Failure
	if failure == nil || failure.Message != "pod p: listed ID looks like a short ID (12 characters)" {
		t.Fatalf("failure = %+v", failure)
	}
	wantBody := "listed under its ID\n" + rule1 + "\npod p: listed ID looks like a short ID (12 characters)\n" +
		"expected: " + testSandboxID + "\nactual:   " + testSandboxID[:12]
	if failure.Body != wantBody {
		t.Errorf("failure body =\n%s\nwant\n%s", failure.Body, wantBody)
	}
	if cases[1].Skipped == nil || cases[1].Skipped.Message != "plain containers not supported by the cri fixture" {
		t.Errorf("skipped = %+v", cases[1].Skipped)
	}
	if cases[2].Failure != nil || cases[2].Skipped != nil || cases[2].SystemOut != "created 200 pods in 41s" || cases[2].Time != "60.000" {
		t.Errorf("passing testcase = %+v", cases[2])
	}
}

func TestWriteJSONRoundTrips(t *testing.T) {
	var buf bytes.Buffer
	report := sampleReport()
	if err := WriteJSON(&buf, report); err != nil {
		t.Fatal(err)
	}
	var parsed Report
	if err := json.Unmarshal(buf.Bytes(), &parsed); err != nil {
		t.Fatal(err)
	}
	if parsed.Results[0].Status != StatusFail || parsed.Results[0].Actual != testSandboxID[:12] || !parsed.Failed() {
		t.Errorf("parsed = %+v", parsed.Results[0])
	}
	if !strings.Contains(buf.String(), `"status": "fail"`) {
		t.Errorf("JSON lacks the lower-case status:\n%s", buf.String())
	}
}

func TestTextReportShowsExpectedAndActual(t *testing.T) {
	var buf bytes.Buffer
	report := sampleReport()
	buf.WriteString(FormatHeader(report))
	r := NewTextReporter(&buf)
	for _, result := range report.Results {
		r.CheckFinished(result)
	}
	buf.WriteString(FormatSummary(report))
	want := `adapter: /opt/adapters/docker --endpoint=unix:///run/docker.sock
reports: adapter docker , runtime docker 20.10.24 at 
fixture: docker

FAIL  sandbox-id-exact               listed under its ID (1.25s)
      rule:     ` + rule1 + `
      reason:   pod p: listed ID looks like a short ID (12 characters)
      expected: ` + testSandboxID + `
      actual:   ` + testSandboxID[:12] + `
SKIP  no-plain-containers            plain never listed (0.00s)
      reason:   plain containers not supported by the cri fixture
PASS  scale-listing                  all listed (60.00s)
      note:     created 200 pods in 41s

3 checks: 1 passed, 1 failed, 1 skipped in 12.5s: NOT CONFORMANT
`
	if got := buf.String(); got != want {
		t.Errorf("text report =\n%s\nwant\n%s", got, want)
	}
}

func TestResultOf(t *testing.T) {
	base := Result{ID: "x"}
	cases := []struct {
		err    error
		status Status
		reason string
	}{
		{nil, StatusPass, ""},
		{skipf("plain containers not supported by the %s fixture", "cri"), StatusSkip, "plain containers not supported by the cri fixture"},
		{prefixed("call 3 of 16", mismatch("disagree", "a", "b")), StatusFail, "call 3 of 16: disagree"},
		{prefixed("fixture", errPlain), StatusFail, "fixture: plain"},
	}
	for _, tc := range cases {
		r := resultOf(base, tc.err)
		if r.Status != tc.status || r.Reason != tc.reason {
			t.Errorf("resultOf(%v) = %s %q, want %s %q", tc.err, r.Status, r.Reason, tc.status, tc.reason)
		}
	}
	if r := resultOf(base, prefixed("call", mismatch("m", "want", "got"))); r.Expected != "want" || r.Actual != "got" {
		t.Errorf("prefixed lost expected/actual: %+v", r)
	}
}

var errPlain = plainError("plain")

type plainError string

func (e plainError) Error() string { return string(e) }
