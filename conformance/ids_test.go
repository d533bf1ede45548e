package conformance

import (
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
	cases := []struct {
		name, listed, want string
	}{
		{"seed bug", "docker://" + testAppID,
			"listed the ID of application container " + testAppID + " instead of the infra sandbox ID: " +
				"this is the seed bug (ipamd records the IP under an ID that no CNI DEL ever carries, so the IP leaks)"},
		{"app short ID", testAppID[:12],
			"listed the ID of application container " + testAppID + " instead of the infra sandbox ID: " +
				"this is the seed bug (ipamd records the IP under an ID that no CNI DEL ever carries, so the IP leaks)"},
		{"scheme", "containerd://" + testSandboxID,
			`listed with the scheme prefix "containerd://"; the CNI plugin receives the bare ID`},
		{"short ID", testSandboxID[:12],
			"listed ID looks like a short ID (12 characters); the CNI plugin receives the full-length ID"},
		{"truncated", testSandboxID[:32], "listed ID is truncated to 32 of 64 characters"},
		{"case", "93E629D853D9F70464DD5B54987533FFE87930CB28A6414DDB48C94B69845E85",
			"listed ID differs from the sandbox ID in letter case; IDs are compared byte for byte"},
		{"other", "c32c237fb5293478da938e388f6e22486790facba0d178ff24271829865976cf",
			"listed ID is not the pod's infra sandbox ID"},
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

func TestFindForPodFallsBackToUIDAndAttempt(t *testing.T) {
	pod := fixture.Pod{Spec: fixture.PodSpec{UID: "u1", Attempt: 1}, SandboxID: testSandboxID}
	list := []runtime.Sandbox{
		{ID: "attempt-0", UID: "u1", Attempt: 0},
		{ID: "attempt-1", UID: "u1", Attempt: 1},
	}
	sb, ok := findForPod(list, pod)
	if !ok || sb.ID != "attempt-1" {
		t.Fatalf("findForPod = %q, %t; want attempt-1, true", sb.ID, ok)
	}
	list = append(list, runtime.Sandbox{ID: testSandboxID, UID: "other"})
	if sb, _ := findForPod(list, pod); sb.ID != testSandboxID {
		t.Errorf("findForPod prefers %q over the exact ID", sb.ID)
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
