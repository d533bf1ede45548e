package conformance

import (
	"errors"
	"strings"
	"testing"

	"github.com/sandboxipam/sandboxipam/conformance/fixture"
	"github.com/sandboxipam/sandboxipam/runtime"
)

const (
	testSandboxID = "93e629d853d9f70464dd5b54987533ffe87930cb28a6414ddb48c94b69845e85"
	testAppID     = "390bb768d7bd8d86cdeff9b10d0ca949731ce2f9b4ee1d93bb63b28f07378eac"
)

// The IDs and the shapes of the seed bug report: the infra container
// 93e629d853d9... and its app container 390bb768d7bd..., reported as
// "docker://390bb768d7bd...".
func TestDiagnoseIDExplainsEachWrongShape(t *testing.T) {
	pod := fixture.Pod{SandboxID: testSandboxID, ContainerIDs: []string{testAppID}}
	seed := " instead of its infra sandbox ID — " + seedBugText
	cases := []struct {
		name, listed, want string
	}{
		{"seed bug", "docker://" + testAppID,
			"listed under the ID of its app container " + testAppID + ` (under a "docker://" scheme)` + seed},
		{"app container", testAppID, "listed under the ID of its app container " + testAppID + seed},
		{"app short ID", testAppID[:12],
			"listed under the ID of its app container " + testAppID + " (as a 12-character prefix)" + seed},
		{"scheme", "containerd://" + testSandboxID,
			`listed under a "containerd://" scheme; the CNI plugin receives the bare ID`},
		{"short ID", testSandboxID[:12],
			"listed under a 12-character prefix of its sandbox ID (the short ID); the CNI plugin receives the full-length ID"},
		{"truncated", testSandboxID[:32], "listed under a 32-character prefix of its 64-character sandbox ID"},
		{"case", "93E629D853D9F70464DD5B54987533FFE87930CB28A6414DDB48C94B69845E85",
			"listed under its sandbox ID in other letter case; IDs are compared byte for byte"},
		{"other", "c32c237fb5293478da938e388f6e22486790facba0d178ff24271829865976cf",
			"listed under another ID, not its infra sandbox ID"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := diagnoseID(testSandboxID, tc.listed, pod); got != tc.want {
				t.Errorf("diagnoseID(%q) =\n%q\nwant\n%q", tc.listed, got, tc.want)
			}
		})
	}
}

func TestRefersTo(t *testing.T) {
	cases := []struct {
		listed string
		want   bool
	}{
		{testAppID, true},
		{"docker://" + testAppID, true},
		{testAppID[:12], true},
		{testAppID[:11], false}, // too short to name a container
		{testSandboxID, false},
		{"", false},
	}
	for _, tc := range cases {
		if got := refersTo(tc.listed, testAppID); got != tc.want {
			t.Errorf("refersTo(%q) = %t, want %t", tc.listed, got, tc.want)
		}
	}
}

// A pod with exactly one app container listed under that container's ID,
// with its own UID and attempt, is the seed bug's shape: findForPod must
// not find it, and must say so.
func TestFindForPodTakesOnlyTheExactID(t *testing.T) {
	pod := fixture.Pod{Spec: fixture.PodSpec{Name: "coredns", UID: "u1", Attempt: 1, Containers: []string{"coredns"}},
		SandboxID: testSandboxID, ContainerIDs: []string{testAppID}}
	list := []runtime.Sandbox{
		{ID: "attempt-0", UID: "u1", Attempt: 0},
		{ID: "docker://" + testAppID, UID: "u1", Attempt: 1},
	}
	_, err := findForPod(list, pod, "running")
	var f *Failure
	if !errors.As(err, &f) || f.Actual != "docker://"+testAppID ||
		!strings.Contains(f.Message, "running pod coredns (attempt 1, one app container) is not listed under its sandbox ID: "+
			"listed under the ID of its app container "+testAppID) || !strings.Contains(f.Message, "the seed bug") {
		t.Fatalf("findForPod = %v, want a failure naming the app container and the seed bug", err)
	}
	if _, err := findForPod(list[:1], pod, ""); err == nil || !strings.Contains(err.Error(), "not listed, under its sandbox ID or any other") {
		t.Errorf("findForPod of an absent pod = %v", err)
	}
	list = append(list, runtime.Sandbox{ID: testSandboxID, UID: "other"})
	if sb, err := findForPod(list, pod, ""); err != nil || sb.ID != testSandboxID {
		t.Errorf("findForPod = %q, %v; want the exact ID", sb.ID, err)
	}
	if sb, ok := stillListed(list[:2], pod); !ok || sb.ID != "docker://"+testAppID {
		t.Errorf("stillListed = %q, %t; want the entry under the app container's ID", sb.ID, ok)
	}
}

func TestListedIDsCapsTheList(t *testing.T) {
	var list []runtime.Sandbox
	for _, id := range []string{"j", "i", "h", "g", "f", "e", "d", "c", "b", "a"} {
		list = append(list, runtime.Sandbox{ID: id})
	}
	if got, want := listedIDs(list), "10 sandboxes: a, b, c, d, e, f, g, h, ..."; got != want {
		t.Errorf("listedIDs = %q, want %q", got, want)
	}
	if got, want := listedIDs(list[:2]), "2 sandboxes: [i, j]"; got != want {
		t.Errorf("listedIDs = %q, want %q", got, want)
	}
}
