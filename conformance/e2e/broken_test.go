package e2e_test

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/sandboxipam/sandboxipam/conformance"
)

// brokenScale keeps the scale check running where it must catch a break
// (shortid, kubeblind) but cheap: the larger scale runs are the shipped adapters'.
const brokenScale = "3"

// brokenAdapter is a test adapter that breaks one rule, and what the
// suite must say about it.
type brokenAdapter struct {
	// name tells runs of one adapter binary with other args apart;
	// default: adapter.
	name    string
	adapter string
	failing []string
	// mayFail are checks that catch the break only when a race goes
	// their way; they may pass or fail.
	mayFail []string
	// scaled runs the scale check, which only shortid and kubeblind fail.
	scaled bool
	// reportsNoIPs: the adapter reports no pod IPs, and pod-ips-match,
	// among the passing checks, must say in words what that costs.
	reportsNoIPs bool
	// passing are checks run beside the failing ones that must pass.
	passing []string
	// args are added to the run's arguments.
	args []string
	// cri runs the case on the private containerd's CRI (the CRI
	// fixture) instead of the docker fixture's dockerd.
	cri bool
	// message is a phrase the main failing check's reason must hold,
	// actual one its actual value must hold.
	mainCheck, message, actual string
	// note, when set, is a phrase one of the main check's notes must hold.
	note string
}

// key names the case's run.
func (c brokenAdapter) key() string {
	if c.name != "" {
		return c.name
	}
	return c.adapter
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
			mainCheck: "no-app-container-ids", message: "the seed bug", actual: "docker://",
		},
		{
			// The seed report's own shape: pods with exactly one app
			// container, listed under that container's docker:// ID. Every
			// check that looks for such a pod finds it by its sandbox ID
			// only; the pods with several or no app containers, and the
			// restarted pod's (two each), are listed right.
			name: "seedbug-one-app", adapter: "seedbug", args: []string{"--adapter-arg=--only=one-app"},
			failing: []string{"sandbox-id-exact", "no-app-container-ids", "pod-identity", "pod-ips-match",
				"stopped-listed-notready", "listing-fresh"},
			passing:   []string{"get-sandbox-matches", "restarted-pod-ids", "removed-not-found"},
			mainCheck: "sandbox-id-exact", message: "one app container) is not listed under its sandbox ID: listed under the ID of its app container",
			actual: "docker://",
		},
		{
			// Only the restarted pod's later attempts: restarted-pod-ids
			// names the seed bug, and the identity checks, which cover
			// every attempt, see it too.
			name: "seedbug-restarted", adapter: "seedbug", args: []string{"--adapter-arg=--only=restarted"},
			failing:   []string{"sandbox-id-exact", "no-app-container-ids", "restarted-pod-ids"},
			mainCheck: "restarted-pod-ids", message: "the seed bug", actual: "docker://",
		},
		{
			// An empty list when a short deadline meets a failing runtime;
			// an error under the long default timeout.
			adapter:   "emptyonshortdeadline",
			failing:   []string{"unreachable-is-error"},
			mainCheck: "unreachable-is-error", message: "deadline returned an empty list and no error", actual: "0 sandboxes, no error",
		},
		{
			// Every sandbox listed twice, alike: only the check of its own
			// sees it.
			adapter:   "dupids",
			failing:   []string{"no-duplicate-ids"},
			passing:   []string{"sandbox-id-exact", "list-get-agree", "concurrent-lists-agree"},
			mainCheck: "no-duplicate-ids", message: "twice",
		},
		{
			// GetSandbox of a NotReady sandbox without its pod's identity:
			// the checks that get a running sandbox, or a stopped one's
			// state, pass it.
			adapter:   "listgetdisagree",
			failing:   []string{"list-get-agree"},
			passing:   []string{"get-sandbox-matches", "stopped-listed-notready"},
			mainCheck: "list-get-agree", message: "NotReady) returned another identity",
		},
		{
			adapter: "shortid",
			// Every check that compares an ID byte for byte.
			failing:   []string{"sandbox-id-exact", "get-sandbox-matches", "restarted-pod-ids", "scale-listing"},
			scaled:    true,
			mainCheck: "sandbox-id-exact", message: "12-character prefix of its sandbox ID",
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
			passing: []string{"pod-ips-match"}, reportsNoIPs: true,
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
			mainCheck: "pod-ips-match", message: "the runtime recorded for it",
		},
		// The two shapes a third-party author might write on either base
		// (conformance/testdata/brokenbase): the shipped docker adapter on
		// dockershim-style pods with addresses in their namespaces, and the
		// shipped containerd adapter's CRI client on containerd's CRI.
		nameKeyed(false), nameKeyed(true),
		kubeBlind(false), kubeBlind(true),
		// The three ways to get a dual-stack pod wrong, on either base:
		// only the dual-stack and IPv6-only pods of the run show them.
		ipv4Only(false), ipv4Only(true),
		firstIPOnly(false), firstIPOnly(true),
		swappedIPv6(false), swappedIPv6(true),
		{
			// Its cache is the run's first listing, taken once the run's
			// pods exist: every check that stops, removes or creates one
			// afterwards sees the stale listing.
			adapter:   "stalelist",
			failing:   []string{"stopped-listed-notready", "removed-not-found", "restarted-pod-ids", "listing-fresh"},
			mainCheck: "listing-fresh", message: "older than the call",
		},
	}
	if *brokenFocus != "" {
		focus := regexp.MustCompile(*brokenFocus)
		cases = slices.DeleteFunc(cases, func(c brokenAdapter) bool { return !focus.MatchString(c.key()) })
	}
	runs := make(map[string][]string, len(cases))
	for _, tc := range cases {
		scale := "0"
		if tc.scaled {
			scale = brokenScale
		}
		args := append([]string{"--adapter", binary(t, tc.adapter), "--scale", scale}, tc.args...)
		args = append(args, "--focus=^("+strings.Join(tc.focus(), "|")+")$")
		if tc.cri {
			runs[tc.key()] = append(args, criFixtureArgs(criContainerd(t))...)
			continue
		}
		runs[tc.key()] = append(args, dockerFixtureArgs(d)...)
	}
	results := runCLIConcurrently(t, runs)
	for _, tc := range cases {
		t.Run(tc.key(), func(t *testing.T) {
			run := results[tc.key()]
			failing := tc.failing
			for _, id := range tc.mayFail {
				if run.result(t, id).Status == conformance.StatusFail {
					failing = append(failing, id)
				}
			}
			expectFocusedOutcome(t, run, tc.focus(), failing)
			if tc.reportsNoIPs {
				if ips := run.result(t, "pod-ips-match"); len(ips.Notes) != 1 || !strings.Contains(ips.Notes[0], "reports no pod IPs") {
					t.Errorf("pod-ips-match notes = %q, want the note for an adapter that reports no IPs", ips.Notes)
				}
			}
			if got := run.result(t, tc.mainCheck); !strings.Contains(got.Reason, tc.message) {
				t.Errorf("%s reason = %q, want it to say %q", tc.mainCheck, got.Reason, tc.message)
			}
			if notes := run.result(t, tc.mainCheck).Notes; tc.note != "" && !slices.ContainsFunc(notes, func(n string) bool { return strings.Contains(n, tc.note) }) {
				t.Errorf("%s notes = %q, want one saying %q", tc.mainCheck, notes, tc.note)
			}
			if got := run.result(t, tc.mainCheck); !strings.Contains(got.Actual, tc.actual) {
				t.Errorf("%s actual = %q, want it to hold %q", tc.mainCheck, got.Actual, tc.actual)
			}
		})
	}
}

// brokenBaseArgs are the arguments of a test adapter built on
// conformance/testdata/brokenbase: the shipped containerd adapter's CRI
// client, or the shipped docker adapter with the shared dockerd's bound.
func brokenBaseArgs(cri bool) []string {
	if cri {
		return []string{"--adapter-arg=--base=containerd", "--adapter-arg=--cri"}
	}
	return []string{"--adapter-arg=--base=docker", dockerAdapterTimeout}
}

// baseName names a case's base for its key.
func baseName(cri bool) string {
	if cri {
		return "cri"
	}
	return "docker"
}

// nameKeyed is the case of the adapter that remembers pods by namespace
// and name: the pod made again under its predecessor's name is listed with
// the old UID (and, where the runtime gave it a new one, the old address).
// Every other pod of the run has a name of its own, or (the restarted
// pod's attempts) the same UID under one name, so the checks that look at
// them pass it.
func nameKeyed(cri bool) brokenAdapter {
	return brokenAdapter{
		name: "namekeyed-" + baseName(cri), adapter: "namekeyed", cri: cri, args: brokenBaseArgs(cri),
		failing: []string{"recreated-pod-own-identity"},
		passing: []string{"sandbox-id-exact", "pod-identity", "pod-ips-match", "restarted-pod-ids", "list-get-agree",
			"listing-fresh"},
		mainCheck: "recreated-pod-own-identity", message: "the UID of the other pod of that namespace and name",
		// Both fixtures give the new pod a new address, so the old one it
		// is listed with is wrong too.
		note: "old pod [",
	}
}

// kubeBlind is the case of the adapter that leaves the kube-* namespaces
// out of its listing: every check that looks for a kube-system pod in a
// listing fails it; GetSandbox still finds them, and the pods of the run's
// own namespace are listed right.
func kubeBlind(cri bool) brokenAdapter {
	return brokenAdapter{
		name: "kubeblind-" + baseName(cri), adapter: "kubeblind", cri: cri, args: brokenBaseArgs(cri), scaled: true,
		failing: []string{"sandbox-id-exact", "pod-identity", "host-network-marked", "pod-ips-match", "listing-fresh",
			"concurrent-lists-agree", "ids-stable-across-relaunch", "scale-listing"},
		passing:   []string{"get-sandbox-matches", "list-get-agree", "recreated-pod-own-identity", "no-app-container-ids"},
		mainCheck: "listing-fresh", message: "pod kube-system/listing-fresh-",
	}
}

// ipv4Only is the case of the adapter that reports only IPv4 addresses,
// in the listing and GetSandbox alike: pod-ips-match finds the first
// dual-stack pod's IPv6 address missing, recreated-pod-own-identity its
// dual-stack pods'. Both calls agree, and every IPv4-only pod is right.
func ipv4Only(cri bool) brokenAdapter {
	return brokenAdapter{
		name: "ipv4only-" + baseName(cri), adapter: "ipv4only", cri: cri, args: brokenBaseArgs(cri),
		failing:   []string{"pod-ips-match", "recreated-pod-own-identity"},
		passing:   []string{"list-get-agree", "pod-identity"},
		mainCheck: "pod-ips-match", message: "reports none of the IPv6 addresses the runtime recorded for it", actual: "IPv6 no IPs",
	}
}

// firstIPOnly is the case of the adapter whose GetSandbox reports only a
// sandbox's first address: list-get-agree finds it disagreeing with the
// listing on a dual-stack pod's IPv6 address, and so does pod-ips-match,
// which gets a running dual-stack pod. The listing is right.
// recreated-pod-own-identity, which gets its dual-stack pods too, is left
// out: it would add two pods to the run and show nothing new.
func firstIPOnly(cri bool) brokenAdapter {
	return brokenAdapter{
		name: "firstiponly-" + baseName(cri), adapter: "firstiponly", cri: cri, args: brokenBaseArgs(cri),
		failing:   []string{"pod-ips-match", "list-get-agree"},
		passing:   []string{"pod-identity"},
		mainCheck: "list-get-agree", message: "returned other IPv6 addresses, twice",
	}
}

// swappedIPv6 is the case of the adapter that lists each pod with another
// pod's IPv6 address: pod-ips-match names the family and, where the
// address is another pod's of the run, that pod; recreated-pod-own-identity
// sees its dual-stack pods listed with others' IPv6 addresses.
// list-get-agree is left out: it sees the listing disagree with GetSandbox
// only when two listings rotate alike, which other runs' pods coming and
// going on the shared runtime decide.
func swappedIPv6(cri bool) brokenAdapter {
	return brokenAdapter{
		name: "swappedipv6-" + baseName(cri), adapter: "swappedipv6", cri: cri, args: brokenBaseArgs(cri),
		failing:   []string{"pod-ips-match", "recreated-pod-own-identity"},
		passing:   []string{"pod-identity"},
		mainCheck: "pod-ips-match", message: "reports other IPv6 addresses than the runtime recorded for it", actual: "IPv6 [fd00:c0f:",
	}
}
