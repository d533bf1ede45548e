package e2e_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/sandboxipam/sandboxipam/conformance"
)

// brokenScale keeps the scale check running where it must catch a break
// (shortid) but cheap: the larger scale runs are the shipped adapters'.
const brokenScale = "3"

// brokenAdapter is a test adapter that breaks one rule, and what the
// suite must say about it.
type brokenAdapter struct {
	adapter string
	failing []string
	// mayFail are checks that catch the break only when a race goes
	// their way; they may pass or fail.
	mayFail []string
	// scaled runs the scale check, which only shortid fails.
	scaled bool
	// passing are checks run beside the failing ones that must pass.
	passing []string
	// args are added to the run's arguments.
	args []string
	// message is a phrase the main failing check's reason must hold,
	// actual one its actual value must hold.
	mainCheck, message, actual string
}

// focus lists the checks its run selects.
func (c brokenAdapter) focus() []string {
	return slices.Concat(c.failing, c.mayFail, c.passing)
}

// TestBrokenAdaptersFailTheirRule runs the suite against each test adapter
// that breaks one rule, and requires exit status 1 and failures in exactly
// the checks of that rule (plus the checks that see the same break from
// another angle). Each runs only the checks its break touches (--focus): a
// whole run creates some thirty containers on the one dockerd the package
// shares: seven whole runs took 91 s alone, focused 34 s. What whole runs
// would add is the example adapter underneath passing the rest of the
// suite, which TestExampleAdapterConforms shows.
func TestBrokenAdaptersFailTheirRule(t *testing.T) {
	t.Parallel()
	d := docker.Get(t)
	cases := []brokenAdapter{
		{
			adapter: "seedbug",
			// The app container's ID shows wherever a check looks up a pod
			// with an app container by its sandbox ID.
			failing:   []string{"sandbox-id-exact", "no-app-container-ids", "restarted-pod-ids"},
			mainCheck: "no-app-container-ids", message: "this is the seed bug", actual: "docker://",
		},
		{
			adapter: "shortid",
			// Every check that compares an ID byte for byte.
			failing:   []string{"sandbox-id-exact", "get-sandbox-matches", "restarted-pod-ids", "scale-listing"},
			scaled:    true,
			mainCheck: "sandbox-id-exact", message: "looks like a short ID",
		},
		{
			adapter: "emptyonerror",
			failing: []string{"unreachable-is-error"},
			// Against a hung runtime the empty list is caught only when the
			// adapter's own client gives up before the host's deadline ends
			// the call: the two deadlines are the same instant. The same
			// race decides whether deadline-short sees an empty list.
			mayFail:   []string{"deadline-hung-runtime", "deadline-short"},
			mainCheck: "unreachable-is-error", message: "returned a list and no error",
		},
		{
			adapter: "listsplain",
			failing: []string{"no-plain-containers"},
			// The example adapter underneath reports no pod IPs:
			// pod-ips-match passes and says in words what that costs.
			passing:   []string{"pod-ips-match"},
			mainCheck: "no-plain-containers", message: "not a Kubernetes pod sandbox",
		},
		{
			// Docker resolves the 12-character prefix (and the names); the
			// listing is right, so nothing else notices.
			adapter:   "shortprefix",
			failing:   []string{"get-sandbox-full-id-only"},
			mainCheck: "get-sandbox-full-id-only", message: "its 12-character short ID", actual: "no error",
		},
		{
			// The shipped docker adapter with the pods' IPs handed round
			// (to another pod of this run or of a run alongside).
			adapter:   "swappedips",
			args:      []string{dockerAdapterTimeout},
			failing:   []string{"pod-ips-match"},
			mainCheck: "pod-ips-match", message: "other IPs than the runtime recorded",
		},
		{
			// Its cache is the run's first listing, taken once the run's
			// pods exist: every check that stops, removes or creates one
			// afterwards sees the stale listing.
			adapter:   "stalelist",
			failing:   []string{"stopped-listed-notready", "removed-not-found", "restarted-pod-ids", "listing-fresh"},
			mainCheck: "listing-fresh", message: "older than the call",
		},
	}
	runs := make(map[string][]string, len(cases))
	for _, tc := range cases {
		scale := "0"
		if tc.scaled {
			scale = brokenScale
		}
		args := append([]string{"--adapter", binary(t, tc.adapter), "--scale", scale}, tc.args...)
		args = append(args, "--focus=^("+strings.Join(tc.focus(), "|")+")$")
		runs[tc.adapter] = append(args, dockerFixtureArgs(d)...)
	}
	results := runCLIConcurrently(t, runs)
	for _, tc := range cases {
		t.Run(tc.adapter, func(t *testing.T) {
			run := results[tc.adapter]
			failing := tc.failing
			for _, id := range tc.mayFail {
				if run.result(t, id).Status == conformance.StatusFail {
					failing = append(failing, id)
				}
			}
			expectFocusedOutcome(t, run, tc.focus(), failing)
			if slices.Contains(tc.passing, "pod-ips-match") {
				if ips := run.result(t, "pod-ips-match"); len(ips.Notes) != 1 || !strings.Contains(ips.Notes[0], "reports no pod IPs") {
					t.Errorf("pod-ips-match notes = %q, want the note for an adapter that reports no IPs", ips.Notes)
				}
			}
			if got := run.result(t, tc.mainCheck); !strings.Contains(got.Reason, tc.message) {
				t.Errorf("%s reason = %q, want it to say %q", tc.mainCheck, got.Reason, tc.message)
			}
			if got := run.result(t, tc.mainCheck); !strings.Contains(got.Actual, tc.actual) {
				t.Errorf("%s actual = %q, want it to hold %q", tc.mainCheck, got.Actual, tc.actual)
			}
		})
	}
}
