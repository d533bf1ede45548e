// Package adaptertest holds the checks every adapter's tests run against a
// real runtime: it lays out one set of pods covering the contract's rules
// through a conformance fixture, and checks a listing ID for ID against
// the IDs the runtime assigned.
package adaptertest

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/sandboxipam/sandboxipam/adapters/internal/critest"
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
	// Plain are containers that belong to no pod (rule 4).
	Plain []string
}

// PlainContainerFunc creates a container that is no pod sandbox and
// returns its ID.
type PlainContainerFunc func(ctx context.Context) (string, error)

// BuildScenario creates the scenario's pods with f. plain, when not nil,
// adds a container that is no pod sandbox.
func BuildScenario(t testing.TB, ctx context.Context, f fixture.Fixture, plain PlainContainerFunc) Scenario {
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
	if plain != nil {
		id, err := plain(ctx)
		if err != nil {
			t.Fatal(err)
		}
		s.Plain = append(s.Plain, id)
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

// NeverListed are IDs no listing may hold: every app container, the
// plain containers, the removed sandbox.
func (s Scenario) NeverListed() []string {
	var ids []string
	for _, pod := range append(s.Existing(), s.Removed) {
		ids = append(ids, pod.ContainerIDs...)
	}
	return append(append(ids, s.Plain...), s.Removed.SandboxID)
}

// State is the state each existing pod's sandbox must be in.
func (s Scenario) State(pod fixture.Pod) runtime.SandboxState {
	if pod.SandboxID == s.Stopped.SandboxID {
		return runtime.StateNotReady
	}
	return runtime.StateReady
}

// CheckListing lists through adapter and checks the listing holds exactly
// the scenario's sandboxes, with their identity and state. It returns the
// listing by ID for further checks.
func CheckListing(t testing.TB, ctx context.Context, adapter runtime.RuntimeAdapter, s Scenario) map[string]runtime.Sandbox {
	t.Helper()
	listed := ListByID(t, ctx, adapter)
	if got, want := SortedIDs(listed), s.SandboxIDs(); !slices.Equal(got, want) {
		t.Fatalf("listed %v\nwant   %v", got, want)
	}
	for _, id := range s.NeverListed() {
		if _, ok := listed[id]; ok {
			t.Errorf("listed %s, which is no existing sandbox", id)
		}
	}
	for _, pod := range s.Existing() {
		CheckSandbox(t, listed[pod.SandboxID], pod, s.State(pod))
	}
	return listed
}

// CheckGetSandbox checks GetSandbox finds a live sandbox by its full ID
// and nothing else: not the removed sandbox, an app container, a short ID
// or a plain container.
func CheckGetSandbox(t testing.TB, ctx context.Context, adapter runtime.RuntimeAdapter, s Scenario) {
	t.Helper()
	got, err := adapter.GetSandbox(ctx, s.Web.SandboxID)
	if err != nil {
		t.Fatalf("GetSandbox(%s): %v", s.Web.SandboxID, err)
	}
	CheckSandbox(t, got, s.Web, runtime.StateReady)
	if got, err := adapter.GetSandbox(ctx, s.Stopped.SandboxID); err != nil || got.State != runtime.StateNotReady {
		t.Errorf("GetSandbox(stopped) = %+v, %v; want NotReady", got, err)
	}
	notFound := map[string]string{
		"removed sandbox":  s.Removed.SandboxID,
		"app container":    s.Web.ContainerIDs[0],
		"12-char short ID": s.Web.SandboxID[:12],
		"unknown ID":       critest.NewID(),
	}
	for i, id := range s.Plain {
		notFound["plain container "+strconv.Itoa(i)] = id
	}
	for what, id := range notFound {
		if _, err := adapter.GetSandbox(ctx, id); !errors.Is(err, runtime.ErrNotFound) {
			t.Errorf("GetSandbox(%s %s) error = %v, want ErrNotFound", what, id, err)
		}
	}
}

// CheckSandbox compares one listed sandbox with the pod it belongs to.
func CheckSandbox(t testing.TB, got runtime.Sandbox, pod fixture.Pod, state runtime.SandboxState) {
	t.Helper()
	spec := pod.Spec
	if got.ID != pod.SandboxID || got.Name != spec.Name || got.Namespace != spec.Namespace || got.UID != spec.UID ||
		got.Attempt != spec.Attempt || got.State != state || got.HostNetwork != spec.HostNetwork {
		t.Errorf("sandbox = %+v\nwant ID %s, pod %s/%s uid %s attempt %d, %s, host network %v",
			got, pod.SandboxID, spec.Namespace, spec.Name, spec.UID, spec.Attempt, state, spec.HostNetwork)
	}
	if got.CreatedAt.IsZero() || time.Since(got.CreatedAt) > time.Hour || time.Until(got.CreatedAt) > time.Minute {
		t.Errorf("sandbox %s CreatedAt = %v, want about now", got.ID, got.CreatedAt)
	}
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
