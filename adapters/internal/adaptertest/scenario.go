// Package adaptertest lays out pods through a conformance fixture for the
// adapters' own tests, and lists them by ID. It checks no rule of the
// contract: those are the conformance suite's, which adapters/plugin_test.go
// runs against every adapter binary with conformancetest.Run. What the
// adapters' tests check with these pods is what only that adapter knows
// (its runtime's own tools agree, its network namespace paths, its
// configuration).
package adaptertest

import (
	"context"
	"slices"
	"testing"

	"github.com/sandboxipam/sandboxipam/conformance/fixture"
	"github.com/sandboxipam/sandboxipam/runtime"
)

// Scenario is the set of pods BuildScenario creates: one per rule.
type Scenario struct {
	Web     fixture.Pod // running, two app containers
	Stopped fixture.Pod // stopped, not removed: listed NotReady (rule 3)
	Retried fixture.Pod // the stopped pod's second sandbox attempt
	Host    fixture.Pod // host network
	Removed fixture.Pod // removed: never listed, not found
}

// BuildScenario creates the scenario's pods with f.
func BuildScenario(t testing.TB, ctx context.Context, f fixture.Fixture) Scenario {
	t.Helper()
	var s Scenario
	s.Web = CreatePod(t, ctx, f, fixture.PodSpec{Name: "web", Namespace: "default", UID: "uid-web", Containers: []string{"app", "sidecar"}})
	s.Stopped = CreatePod(t, ctx, f, fixture.PodSpec{Name: "job", Namespace: "batch", UID: "uid-job", Containers: []string{"worker"}})
	if err := f.StopPod(ctx, s.Stopped); err != nil {
		t.Fatal(err)
	}
	// CRI runtimes reserve container names without the sandbox attempt,
	// and the stopped attempt's "worker" still exists: kubelet would
	// bump the container attempt, the fixture names it apart.
	s.Retried = CreatePod(t, ctx, f, fixture.PodSpec{Name: "job", Namespace: "batch", UID: "uid-job", Attempt: 1, Containers: []string{"worker-retry"}})
	s.Host = CreatePod(t, ctx, f, fixture.PodSpec{Name: "agent", Namespace: "kube-system", UID: "uid-agent", HostNetwork: true, Containers: []string{"agent"}})
	s.Removed = CreatePod(t, ctx, f, fixture.PodSpec{Name: "gone", Namespace: "default", UID: "uid-gone", Containers: []string{"app"}})
	if err := f.RemovePod(ctx, s.Removed); err != nil {
		t.Fatal(err)
	}
	return s
}

// CreatePod creates one pod or fails t.
func CreatePod(t testing.TB, ctx context.Context, f fixture.Fixture, spec fixture.PodSpec) fixture.Pod {
	t.Helper()
	pod, err := f.CreatePod(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	return pod
}

// Existing are the pods whose sandboxes still exist.
func (s Scenario) Existing() []fixture.Pod {
	return []fixture.Pod{s.Web, s.Stopped, s.Retried, s.Host}
}

// SandboxIDs are the sandbox IDs a listing must hold, sorted.
func (s Scenario) SandboxIDs() []string {
	var ids []string
	for _, pod := range s.Existing() {
		ids = append(ids, pod.SandboxID)
	}
	slices.Sort(ids)
	return ids
}

// ListByID lists through adapter, failing t on error.
func ListByID(t testing.TB, ctx context.Context, adapter runtime.RuntimeAdapter) map[string]runtime.Sandbox {
	t.Helper()
	sandboxes, err := adapter.ListSandboxes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	byID := make(map[string]runtime.Sandbox, len(sandboxes))
	for _, sb := range sandboxes {
		if _, dup := byID[sb.ID]; dup {
			t.Errorf("sandbox %s listed twice", sb.ID)
		}
		byID[sb.ID] = sb
	}
	return byID
}

// SortedIDs returns the listing's IDs, sorted.
func SortedIDs(listed map[string]runtime.Sandbox) []string {
	ids := make([]string, 0, len(listed))
	for id := range listed {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}
