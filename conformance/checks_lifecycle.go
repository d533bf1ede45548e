package conformance

import (
	"context"
	"errors"
	"fmt"

	"github.com/sandboxipam/sandboxipam/conformance/fixture"
	"github.com/sandboxipam/sandboxipam/runtime"
)

func checkStopped(ctx context.Context, s *session) error {
	pod, _, err := s.reservedPod(ctx, reservedStopped)
	if err != nil {
		return err
	}
	if err := expectState(ctx, s, pod, runtime.StateReady, "running"); err != nil {
		return err
	}
	if err := s.stopPod(ctx, pod); err != nil {
		return err
	}
	if err := expectState(ctx, s, pod, runtime.StateNotReady, "stopped"); err != nil {
		return err
	}
	sb, err := s.get(ctx, pod.SandboxID)
	if err != nil || sb.State != runtime.StateNotReady {
		return mismatch("GetSandbox of a stopped sandbox", "the sandbox, "+runtime.StateNotReady.String(), describeGet(sb, err))
	}
	return nil
}

// expectState lists the sandboxes and requires pod to be listed in state.
func expectState(ctx context.Context, s *session, pod fixture.Pod, state runtime.SandboxState, what string) error {
	list, err := s.list(ctx)
	if err != nil {
		return err
	}
	sb, err := findForPod(list, pod, what)
	if err != nil {
		return prefixed("it still owns its IP", err)
	}
	if sb.State != state {
		return mismatch(fmt.Sprintf("%s sandbox of pod %s is listed in the wrong state", what, pod.Spec.Name),
			state.String(), sb.State.String())
	}
	return nil
}

func checkRemoved(ctx context.Context, s *session) error {
	pod, item, err := s.reservedPod(ctx, reservedRemoved)
	if err != nil {
		return err
	}
	if err := s.removeOwnPod(ctx, pod, item); err != nil {
		return err
	}
	list, err := s.list(ctx)
	if err != nil {
		return err
	}
	if sb, ok := stillListed(list, pod); ok {
		return mismatch(fmt.Sprintf("removed pod %s is still listed", pod.Spec.Name), "not listed", sb.ID)
	}
	sb, err := s.get(ctx, pod.SandboxID)
	if !errors.Is(err, runtime.ErrNotFound) {
		return mismatch("GetSandbox of a removed sandbox did not report ErrNotFound (checked with errors.Is through the plugin)",
			"an error wrapping runtime.ErrNotFound", describeGet(sb, err))
	}
	return nil
}

// restartAttempts is how many sandbox attempts the restarted-pod check
// makes of one pod: all but the last are stopped, as kubelet leaves them
// until it garbage-collects them.
const restartAttempts = 3

func checkRestarted(ctx context.Context, s *session) error {
	var pods []fixture.Pod
	var firstItem *resource
	states := make([]runtime.SandboxState, restartAttempts)
	for attempt := range uint32(restartAttempts) {
		pod, item, err := s.reservedPod(ctx, restartedKey(attempt))
		if err != nil {
			return err
		}
		if attempt == 0 {
			firstItem = item
		}
		for _, earlier := range pods {
			if earlier.SandboxID == pod.SandboxID {
				return fmt.Errorf("fixture %s reused sandbox ID %s for attempt %d", s.fixture.Name(), pod.SandboxID, attempt)
			}
		}
		pods = append(pods, pod)
		states[attempt] = runtime.StateReady
		if attempt < restartAttempts-1 {
			if err := s.stopPod(ctx, pod); err != nil {
				return err
			}
			states[attempt] = runtime.StateNotReady
		}
	}
	if err := expectOwnIDs(ctx, s, pods, states); err != nil {
		return err
	}
	if err := firstItem.Release(ctx); err != nil {
		return fmt.Errorf("fixture %s: %w", s.fixture.Name(), err)
	}
	list, err := s.list(ctx)
	if err != nil {
		return err
	}
	if _, ok := findByID(list, pods[0].SandboxID); ok {
		return mismatch("attempt 0 is still listed after it was removed", "not listed", pods[0].SandboxID)
	}
	return expectOwnIDs(ctx, s, pods[1:], states[1:])
}

// expectOwnIDs lists the sandboxes and requires each pod listed under its
// own sandbox ID, with its attempt, in the matching state.
func expectOwnIDs(ctx context.Context, s *session, pods []fixture.Pod, states []runtime.SandboxState) error {
	list, err := s.list(ctx)
	if err != nil {
		return err
	}
	for i, pod := range pods {
		what := "running"
		if states[i] == runtime.StateNotReady {
			what = "stopped"
		}
		sb, err := findForPod(list, pod, what)
		if err != nil {
			return prefixed(fmt.Sprintf("attempt %d of a restarted pod", pod.Spec.Attempt), err)
		}
		if sb.Attempt != pod.Spec.Attempt || sb.State != states[i] {
			return mismatch(fmt.Sprintf("sandbox %s of pod %s", pod.SandboxID, pod.Spec.Name),
				fmt.Sprintf("attempt=%d %s", pod.Spec.Attempt, states[i]), fmt.Sprintf("attempt=%d %s", sb.Attempt, sb.State))
		}
	}
	return nil
}

func checkNoPlainContainers(ctx context.Context, s *session) error {
	// The shared pods make sure the plain container is not alone.
	if _, err := s.sharedPods(ctx); err != nil {
		return err
	}
	name := fmt.Sprintf("plain-%s", s.runID)
	fixtureCtx, cancel := s.fixtureCtx(ctx)
	defer cancel()
	plainID, err := s.fixture.CreatePlainContainer(fixtureCtx, name)
	if errors.Is(err, fixture.ErrNotSupported) {
		return skipf("plain containers not supported by the %s fixture", s.fixture.Name())
	}
	if err != nil {
		return fmt.Errorf("fixture %s: create plain container: %w", s.fixture.Name(), err)
	}
	// The fixture has no call to remove one container; its Cleanup does.
	s.note("plain container %s (%s) is removed by the fixture's clean-up", name, plainID)
	list, err := s.list(ctx)
	if err != nil {
		return err
	}
	for _, sb := range list {
		if refersTo(sb.ID, plainID) {
			return mismatch(fmt.Sprintf("listed plain container %s, which is not a Kubernetes pod sandbox", name), "not listed", sb.ID)
		}
	}
	sb, err := s.get(ctx, plainID)
	if !errors.Is(err, runtime.ErrNotFound) {
		return mismatch("GetSandbox of a plain container did not report ErrNotFound",
			"an error wrapping runtime.ErrNotFound", describeGet(sb, err))
	}
	return nil
}
