package conformance

import (
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
	web := fixture.Pod{Spec: fixture.PodSpec{Name: "web"}, SandboxID: "w", IPs: []netip.Addr{a}}
	db := fixture.Pod{Spec: fixture.PodSpec{Name: "db"}, SandboxID: "d", IPs: []netip.Addr{b}}
	host := fixture.Pod{Spec: fixture.PodSpec{Name: "agent", HostNetwork: true}, SandboxID: "h"}
	owner := ownersOf([]fixture.Pod{web, db, host})
	cases := []struct {
		name    string
		pod     fixture.Pod
		ips     []netip.Addr
		stopped bool
		fail    string
	}{
		{"own IP", web, []netip.Addr{a}, false, ""},
		{"own IP twice", web, []netip.Addr{a, a}, false, ""},
		{"another pod's", web, []netip.Addr{b}, false, "b is pod db's"},
		{"none while running", web, nil, false, "other IPs than the runtime recorded"},
		{"stopped keeps its own", web, []netip.Addr{a}, true, ""},
		{"stopped reports another's", web, []netip.Addr{b}, true, "the address of pod db"},
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
