package conformance

import (
	"context"
	"errors"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/sandboxipam/sandboxipam/conformance/fixture"
	"github.com/sandboxipam/sandboxipam/runtime"
)

func TestUniqueIDsNamesTheRepeatedID(t *testing.T) {
	list := []runtime.Sandbox{{ID: "a"}, {ID: "b", State: runtime.StateReady}, {ID: "b"}}
	err := uniqueIDs(list)
	var f *Failure
	if !errors.As(err, &f) || !strings.Contains(f.Message, "sandbox ID b twice (entries 2 and 3 of 3)") {
		t.Fatalf("uniqueIDs = %v, want a failure naming b and its entries", err)
	}
	if err := uniqueIDs(list[:2]); err != nil {
		t.Errorf("uniqueIDs of distinct IDs = %v", err)
	}
}

func TestPrefixedKeepsNilNil(t *testing.T) {
	if err := prefixed("x", nil); err != nil {
		t.Errorf("prefixed(nil) = %v, want nil", err)
	}
}

func TestLookalikesOfAnID(t *testing.T) {
	id := "93e629d853d9f70464dd5b54987533ffe87930cb28a6414ddb48c94b69845e85"
	got := lookalikes(id, "web", "k8s_POD_web_shop_u_0")
	want := []string{id[:12], id[:63], strings.ToUpper(id), "web", "k8s_POD_web_shop_u_0"}
	if len(got) != len(want) {
		t.Fatalf("lookalikes = %v", got)
	}
	for i, l := range got {
		if l.value != want[i] || l.value == id {
			t.Errorf("lookalike %d (%s) = %q, want %q", i, l.what, l.value, want[i])
		}
	}
}

func TestJudgeIPs(t *testing.T) {
	a, b := netip.MustParseAddr("198.18.0.1"), netip.MustParseAddr("198.18.0.2")
	a6, b6, c6 := netip.MustParseAddr("fd00:c0f::a"), netip.MustParseAddr("fd00:c0f::b"), netip.MustParseAddr("fd00:c0f::c")
	web := fixture.Pod{Spec: fixture.PodSpec{Name: "web"}, SandboxID: "w", IPs: []netip.Addr{a, a6}}
	db := fixture.Pod{Spec: fixture.PodSpec{Name: "db"}, SandboxID: "d", IPs: []netip.Addr{b, b6}}
	v4 := fixture.Pod{Spec: fixture.PodSpec{Name: "v4"}, SandboxID: "4", IPs: []netip.Addr{netip.MustParseAddr("198.18.0.4")}}
	v6 := fixture.Pod{Spec: fixture.PodSpec{Name: "v6"}, SandboxID: "6", IPs: []netip.Addr{c6}}
	host := fixture.Pod{Spec: fixture.PodSpec{Name: "agent", HostNetwork: true}, SandboxID: "h"}
	owner := ownersOf([]fixture.Pod{web, db, v4, v6, host})
	cases := []struct {
		name    string
		pod     fixture.Pod
		ips     []netip.Addr
		stopped bool
		fail    string
	}{
		{"own IPs", web, []netip.Addr{a6, a}, false, ""},
		{"own IPs twice", web, []netip.Addr{a, a6, a}, false, ""},
		{"another pod's", web, []netip.Addr{b, b6}, false, "reports other IPv4 addresses than the runtime recorded for it"},
		{"another pod's named", web, []netip.Addr{b, b6}, false, "b belongs to pod db (sandbox d)"},
		{"none while running", web, nil, false, "dual-stack pod web reports none of the IPv4 addresses the runtime recorded for it"},
		{"IPv6 dropped", web, []netip.Addr{a}, false, "sandbox w of running dual-stack pod web reports none of the IPv6 addresses"},
		{"IPv4 dropped", web, []netip.Addr{a6}, false, "reports none of the IPv4 addresses"},
		{"another pod's IPv6", web, []netip.Addr{a, b6}, false, "reports other IPv6 addresses"},
		{"another pod's IPv6 named", web, []netip.Addr{a, b6}, false, "fd00:c0f::b belongs to pod db (sandbox d)"},
		{"IPv6-only pod's swapped", v6, []netip.Addr{a6}, false, "running IPv6-only pod v6 reports other IPv6 addresses"},
		{"IPv6-only pod's own", v6, []netip.Addr{c6}, false, ""},
		{"IPv4-only pod with an IPv6", v4, []netip.Addr{v4.IPs[0], c6}, false, "IPv4-only pod v4 reports other IPv6 addresses"},
		{"stopped keeps its own", web, []netip.Addr{a, a6}, true, ""},
		{"stopped reports another's", web, []netip.Addr{b}, true, "the address of pod db"},
		{"stopped reports another's IPv6", web, []netip.Addr{b6}, true, "reports fd00:c0f::b, the address of pod db"},
		{"host network none", host, nil, false, ""},
		{"host network another's", host, []netip.Addr{a}, false, "host-network sandbox h of pod agent reports 198.18.0.1"},
	}
	for _, tc := range cases {
		err := judgeIPs(tc.pod, runtime.Sandbox{ID: tc.pod.SandboxID, IPs: tc.ips}, tc.stopped, owner)
		switch {
		case tc.fail == "" && err != nil:
			t.Errorf("%s: %v, want a pass", tc.name, err)
		case tc.fail != "" && (err == nil || !strings.Contains(strings.ReplaceAll(err.Error(), "198.18.0.2", "b"), tc.fail)):
			t.Errorf("%s: %v, want a failure saying %q", tc.name, err, tc.fail)
		}
	}
}

// TestJudgeIPsNamesTheFamilyOnBothSides: a failure's expected and actual
// values are the addresses of the family that differs, named.
func TestJudgeIPsNamesTheFamilyOnBothSides(t *testing.T) {
	a, a6 := netip.MustParseAddr("198.18.0.1"), netip.MustParseAddr("fd00:c0f::a")
	web := fixture.Pod{Spec: fixture.PodSpec{Name: "web", Namespace: "shop"}, SandboxID: "w", IPs: []netip.Addr{a, a6}}
	err := judgeIPs(web, runtime.Sandbox{ID: "w", IPs: []netip.Addr{a}}, false, ownersOf([]fixture.Pod{web}))
	var f *Failure
	if !errors.As(err, &f) || f.Expected != "IPv6 [fd00:c0f::a]" || f.Actual != "IPv6 no IPs (all reported: [198.18.0.1])" {
		t.Fatalf("judgeIPs = %#v, want expected IPv6 [fd00:c0f::a], actual IPv6 no IPs (all reported: [198.18.0.1])", err)
	}
}

func TestSummariseNearestRank(t *testing.T) {
	var took []time.Duration
	for i := 100; i >= 1; i-- {
		took = append(took, time.Duration(i)*time.Millisecond)
	}
	got := summarise(took)
	want := Latency{Calls: 100, P50: 50, P90: 90, P99: 99, Max: 100}
	if got != want {
		t.Errorf("summarise = %+v, want %+v", got, want)
	}
	if got := summarise(nil); got != (Latency{}) {
		t.Errorf("summarise(nil) = %+v", got)
	}
}

func TestJudgeFailFastNamesTheEmptyList(t *testing.T) {
	s := &session{cfg: Config{DeadlineSlack: time.Second}}
	cases := []struct {
		name    string
		outcome callOutcome
		list    []runtime.Sandbox
		want    string
	}{
		{"error", callOutcome{returned: true, err: runtime.ErrUnavailable}, nil, ""},
		{"deadline", callOutcome{returned: true, err: context.DeadlineExceeded}, nil, ""},
		{"empty list", callOutcome{returned: true}, []runtime.Sandbox{},
			"ListSandboxes here with a 100ms deadline returned an empty list and no error"},
		{"list", callOutcome{returned: true}, []runtime.Sandbox{{ID: "a"}}, "returned a list and no error"},
		{"hang", callOutcome{}, nil, "ignored its 100ms deadline"},
	}
	for _, tc := range cases {
		err := judgeFailFastList(s, "here", 100*time.Millisecond, tc.outcome, tc.list)
		if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s: judgeFailFastList = %v, want %q", tc.name, err, tc.want)
		}
	}
	notFound := callOutcome{returned: true, err: runtime.ErrNotFound}
	if err := judgeFailFastGet(s, "here", time.Second, notFound, runtime.Sandbox{}); err == nil || !strings.Contains(err.Error(), "take the pod for gone") {
		t.Errorf("judgeFailFastGet(ErrNotFound) = %v", err)
	}
	if err := judgeFailFastGet(s, "here", time.Second, callOutcome{returned: true}, runtime.Sandbox{ID: "a"}); err == nil {
		t.Error("judgeFailFastGet of a sandbox and no error passed")
	}
}

func TestListGetDiff(t *testing.T) {
	listed := runtime.Sandbox{ID: "a", Name: "web", Namespace: "shop", UID: "u", Attempt: 1, State: runtime.StateNotReady}
	cases := []struct {
		name string
		got  runtime.Sandbox
		err  error
		want string
	}{
		{"same", listed, nil, ""},
		{"not found", runtime.Sandbox{}, runtime.ErrNotFound, "reported ErrNotFound"},
		{"error", runtime.Sandbox{}, runtime.ErrUnavailable, "failed"},
		{"state", runtime.Sandbox{ID: "a", Name: "web", Namespace: "shop", UID: "u", Attempt: 1, State: runtime.StateReady}, nil, "another state"},
		{"identity", runtime.Sandbox{ID: "a", State: runtime.StateNotReady}, nil, "another identity"},
		{"id", runtime.Sandbox{ID: "b"}, nil, "another ID"},
	}
	for _, tc := range cases {
		if got := listGetDiff(listed, tc.got, tc.err); !strings.Contains(got, tc.want) || (tc.want == "") != (got == "") {
			t.Errorf("%s: listGetDiff = %q, want %q", tc.name, got, tc.want)
		}
	}
}

// Two pods of one namespace and name, as a StatefulSet makes them: each
// must carry its own UID, attempt and addresses, and a sandbox that
// carries the other's UID is named as keyed by name.
func TestOwnIdentityTellsPodsOfOneNameApart(t *testing.T) {
	a, b := netip.MustParseAddr("198.18.0.1"), netip.MustParseAddr("198.18.0.2")
	old := fixture.Pod{Spec: fixture.PodSpec{Name: "web-0", Namespace: "ns", UID: "u-old", Attempt: 1}, SandboxID: "o", IPs: []netip.Addr{a}}
	fresh := fixture.Pod{Spec: fixture.PodSpec{Name: "web-0", Namespace: "ns", UID: "u-new"}, SandboxID: "n", IPs: []netip.Addr{b}}
	all := []fixture.Pod{old, fresh}
	owner := distinctOwners(all)
	listed := func(pod fixture.Pod, state runtime.SandboxState, ips ...netip.Addr) runtime.Sandbox {
		return runtime.Sandbox{ID: pod.SandboxID, Name: pod.Spec.Name, Namespace: pod.Spec.Namespace, UID: pod.Spec.UID,
			Attempt: pod.Spec.Attempt, State: state, IPs: ips}
	}
	keyedByName := listed(fresh, runtime.StateReady, a)
	keyedByName.UID, keyedByName.Attempt = old.Spec.UID, old.Spec.Attempt
	cases := []struct {
		name string
		pod  podInState
		sb   runtime.Sandbox
		fail string
	}{
		{"new pod its own", podInState{fresh, runtime.StateReady}, listed(fresh, runtime.StateReady, b), ""},
		{"old stopped keeps its own", podInState{old, runtime.StateNotReady}, listed(old, runtime.StateNotReady, a), ""},
		{"new pod with the old one's identity", podInState{fresh, runtime.StateReady}, keyedByName,
			"the UID of the other pod of that namespace and name (sandbox o)"},
		{"new pod with the old one's address", podInState{fresh, runtime.StateReady}, listed(fresh, runtime.StateReady, a),
			"198.18.0.1 belongs to pod ns/web-0 (sandbox o)"},
		{"old stopped with the new one's address", podInState{old, runtime.StateNotReady}, listed(old, runtime.StateNotReady, b),
			"the address of pod ns/web-0 (sandbox n)"},
		{"old listed Ready", podInState{old, runtime.StateNotReady}, listed(old, runtime.StateReady), "wrong state"},
	}
	for _, tc := range cases {
		err := ownIdentity(tc.pod, tc.sb, all, owner)
		switch {
		case tc.fail == "" && err != nil:
			t.Errorf("%s: %v, want a pass", tc.name, err)
		case tc.fail != "" && (err == nil || !strings.Contains(err.Error(), tc.fail)):
			t.Errorf("%s: %v, want a failure saying %q", tc.name, err, tc.fail)
		}
	}
	// Without addresses to compare (an adapter that reports none), only
	// the identity and state count.
	if err := ownIdentity(podInState{fresh, runtime.StateReady}, listed(fresh, runtime.StateReady), all, nil); err != nil {
		t.Errorf("adapter that reports no IPs: %v, want a pass", err)
	}
	// An address the runtime gave both pods (released, then reused) is
	// nobody's in particular: the stopped one may still report it.
	fresh.IPs = []netip.Addr{a}
	if err := ownIdentity(podInState{old, runtime.StateNotReady}, listed(old, runtime.StateNotReady, a), all, distinctOwners([]fixture.Pod{old, fresh})); err != nil {
		t.Errorf("stopped pod reporting an address the runtime reused: %v, want a pass", err)
	}
}

// TestListGetDiffComparesEachFamily: GetSandbox must report the listed
// addresses of both families; their order does not matter.
func TestListGetDiffComparesEachFamily(t *testing.T) {
	a, a6, b6 := netip.MustParseAddr("198.18.0.1"), netip.MustParseAddr("fd00:c0f::a"), netip.MustParseAddr("fd00:c0f::b")
	listed := runtime.Sandbox{ID: "w", Name: "web", Namespace: "shop", UID: "u", IPs: []netip.Addr{a, a6}}
	with := func(ips ...netip.Addr) runtime.Sandbox { sb := listed; sb.IPs = ips; return sb }
	cases := []struct {
		got  runtime.Sandbox
		want string
	}{
		{with(a6, a), ""},
		{with(a), "returned other IPv6 addresses"},
		{with(a, b6), "returned other IPv6 addresses"},
		{with(), "returned other IPv4 and IPv6 addresses"},
	}
	for _, tc := range cases {
		if got := listGetDiff(listed, tc.got, nil); got != tc.want {
			t.Errorf("GetSandbox reporting %v: diff %q, want %q", tc.got.IPs, got, tc.want)
		}
	}
}
