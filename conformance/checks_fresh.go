package conformance

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/sandboxipam/sandboxipam/conformance/fixture"
	"github.com/sandboxipam/sandboxipam/runtime"
)

// recoveryPoll is how often the runtime-restart check asks again while it
// waits for the adapter to recover.
const recoveryPoll = 100 * time.Millisecond

// checkFreshness creates a pod in each namespace, side by side, and
// requires both in the first listing after both creates returned, and both
// gone from the first listing after both were removed.
func checkFreshness(ctx context.Context, s *session) error {
	if err := s.requirePods(); err != nil {
		return err
	}
	// A listing taken first gives a caching adapter something to serve.
	if _, err := s.list(ctx); err != nil {
		return err
	}
	pods, items, err := s.createPodsSideBySide(ctx, s.podSpec(appContainer), s.podSpecIn(SystemNamespace, appContainer))
	if err != nil {
		return err
	}
	created := time.Now()
	list, err := s.list(ctx)
	if err != nil {
		return err
	}
	listedAfter := time.Since(created)
	for _, pod := range pods {
		if err := expectFresh(list, pod); err != nil {
			return err
		}
	}
	if err := forEachParallel(len(pods), func(i int) error { return s.removeOwnPod(ctx, pods[i], items[i]) }); err != nil {
		return err
	}
	removed := time.Now()
	list, err = s.list(ctx)
	if err != nil {
		return err
	}
	goneAfter := time.Since(removed)
	for _, pod := range pods {
		if sb, ok := stillListed(list, pod); ok {
			return mismatch(fmt.Sprintf("the first listing after the runtime removed pod %s still holds it: "+
				"the adapter serves a listing older than the call", podName(pod.Spec)), "not listed", describeListed(sb, true))
		}
	}
	s.note("created pods (in %s) listed by a ListSandboxes that returned %s after the create calls; removed pods gone from one that returned %s after the removals",
		namespacesOf(pods), listedAfter.Round(time.Millisecond), goneAfter.Round(time.Millisecond))
	return nil
}

// expectFresh requires pod, created just before list was taken, in it.
func expectFresh(list []runtime.Sandbox, pod fixture.Pod) error {
	_, err := findForPod(list, pod, "new")
	if err == nil {
		return nil
	}
	if _, misfiled := misfiled(list, pod); misfiled {
		return err // listed, under a wrong ID: the listing is fresh, its ID is not
	}
	return mismatch(fmt.Sprintf("the first listing after the runtime created pod %s does not hold it: "+
		"the adapter serves a listing older than the call, or leaves out its namespace, and ipamd would release the new pod's IP", podName(pod.Spec)),
		pod.SandboxID, listedIDs(list))
}

// createPodsSideBySide creates one pod per spec at once, and returns them
// with the resources that remove them, in the order of specs.
func (s *session) createPodsSideBySide(ctx context.Context, specs ...fixture.PodSpec) ([]fixture.Pod, []*resource, error) {
	pods := make([]fixture.Pod, len(specs))
	items := make([]*resource, len(specs))
	err := forEachParallel(len(specs), func(i int) error {
		var err error
		pods[i], items[i], err = s.createPod(ctx, specs[i])
		return err
	})
	return pods, items, err
}

// removeOwnPod stops and removes a pod the check created, before the
// check ends.
func (s *session) removeOwnPod(ctx context.Context, pod fixture.Pod, item *resource) error {
	if err := s.stopPod(ctx, pod); err != nil {
		return err
	}
	if err := item.Release(ctx); err != nil {
		return fmt.Errorf("fixture %s: %w", s.fixture.Name(), err)
	}
	return nil
}

// namespacesOf lists the namespaces of pods, for a note.
func namespacesOf(pods []fixture.Pod) string {
	var names []string
	for _, pod := range pods {
		if !slices.Contains(names, pod.Spec.Namespace) {
			names = append(names, pod.Spec.Namespace)
		}
	}
	return strings.Join(names, " and ")
}

func checkRuntimeRestart(ctx context.Context, s *session) error {
	if err := s.requirePods(); err != nil {
		return err
	}
	control, ok := s.fixture.(fixture.RuntimeControl)
	if !ok {
		return skipf("runtime restart not supported by this fixture")
	}
	pods, err := s.createPods(ctx, s.podSpec(appContainer), s.podSpec())
	if err != nil {
		return err
	}
	before, err := s.list(ctx)
	if err != nil {
		return err
	}
	pid := s.adapterPID()
	outage, err := s.outage(ctx, control)
	if err != nil {
		return err
	}
	after, waited, err := s.awaitRecovery(ctx)
	if err != nil {
		return err
	}
	s.note("during the outage: %s; listing again %s after the runtime was back", outage, waited.Round(time.Millisecond))
	if now := s.adapterPID(); now != pid {
		return mismatch("the adapter process was replaced during the runtime's restart", fmt.Sprintf("pid %d", pid), fmt.Sprintf("pid %d", now))
	}
	for _, pod := range pods {
		if _, err := findForPod(before, pod, "running"); err != nil {
			return prefixed("before the runtime restarted", err)
		}
		if _, err := findForPod(after, pod, ""); err != nil {
			return prefixed("after the runtime restarted", err)
		}
	}
	return nil
}

// adapterPID is the shared adapter's process ID, or 0 when unknown.
func (s *session) adapterPID() int {
	if p, ok := s.adapter.(interface{ PID() int }); ok {
		return p.PID()
	}
	return 0
}

// outage stops the runtime, requires both calls to fail with
// ErrUnavailable while it is down, and starts it again whatever happened.
func (s *session) outage(ctx context.Context, control fixture.RuntimeControl) (summary string, err error) {
	fixtureCtx, cancel := s.fixtureCtx(ctx)
	defer cancel()
	if err := control.StopRuntime(fixtureCtx); err != nil {
		_ = control.StartRuntime(fixtureCtx)
		return "", fmt.Errorf("fixture %s: stop the runtime: %w", s.fixture.Name(), err)
	}
	defer func() {
		if startErr := control.StartRuntime(fixtureCtx); startErr != nil {
			err = errors.Join(err, fmt.Errorf("fixture %s: start the runtime: %w", s.fixture.Name(), startErr))
		}
	}()
	callCtx, cancelCall := s.callCtx(ctx)
	defer cancelCall()
	began := time.Now()
	list, listErr := s.adapter.ListSandboxes(callCtx)
	listTook := time.Since(began)
	if listErr == nil {
		return "", mismatch("ListSandboxes while the runtime was down returned a list and no error: "+
			"ipamd would take an empty one for \"no pods\" and release every IP",
			"an error wrapping runtime.ErrUnavailable", fmt.Sprintf("%d sandboxes, no error", len(list)))
	}
	if !errors.Is(listErr, runtime.ErrUnavailable) {
		return "", mismatch("ListSandboxes while the runtime was down failed without runtime.ErrUnavailable",
			"an error wrapping runtime.ErrUnavailable", listErr.Error())
	}
	sb, getErr := s.adapter.GetSandbox(callCtx, randomSandboxID())
	if !errors.Is(getErr, runtime.ErrUnavailable) {
		return "", mismatch("GetSandbox while the runtime was down did not report runtime.ErrUnavailable",
			"an error wrapping runtime.ErrUnavailable", describeGet(sb, getErr))
	}
	if err := expectFailFast(ctx, s, s.adapter, "while the runtime was down"); err != nil {
		return "", err
	}
	return fmt.Sprintf("ListSandboxes failed with ErrUnavailable after %s", listTook.Round(time.Millisecond)), nil
}

// awaitRecovery lists until the adapter succeeds again, at most
// Config.RecoveryTimeout, and returns that listing. Nothing announces
// that the adapter reaches the runtime again, so it polls; the suite is
// a shipped library, so not with the tests' testsupport.Poll.
func (s *session) awaitRecovery(ctx context.Context) ([]runtime.Sandbox, time.Duration, error) {
	began := time.Now()
	waitCtx, cancel := context.WithTimeout(ctx, s.cfg.RecoveryTimeout)
	defer cancel()
	ticker := time.NewTicker(recoveryPoll)
	defer ticker.Stop()
	var lastErr error
	for {
		callCtx, cancelCall := s.callCtx(waitCtx)
		list, err := s.adapter.ListSandboxes(callCtx)
		cancelCall()
		if err == nil {
			return list, time.Since(began), nil
		}
		lastErr = err
		select {
		case <-waitCtx.Done():
			return nil, 0, mismatch(fmt.Sprintf("the adapter did not list again within %s of the runtime's restart, "+
				"without being relaunched", s.cfg.RecoveryTimeout), "a listing", "last error: "+lastErr.Error())
		case <-ticker.C:
		}
	}
}
