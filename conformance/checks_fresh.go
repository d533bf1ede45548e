package conformance

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sandboxipam/sandboxipam/conformance/fixture"
	"github.com/sandboxipam/sandboxipam/runtime"
)

// recoveryPoll is how often the runtime-restart check asks again while it
// waits for the adapter to recover.
const recoveryPoll = 100 * time.Millisecond

func checkFreshness(ctx context.Context, s *session) error {
	if err := s.requirePods(); err != nil {
		return err
	}
	// A listing taken first gives a caching adapter something to serve.
	if _, err := s.list(ctx); err != nil {
		return err
	}
	pod, item, err := s.createPod(ctx, s.podSpec(appContainer))
	if err != nil {
		return err
	}
	created := time.Now()
	list, err := s.list(ctx)
	if err != nil {
		return err
	}
	listedAfter := time.Since(created)
	if _, err := findForPod(list, pod, "new"); err != nil {
		if _, misfiled := misfiled(list, pod); misfiled {
			return err // listed, under a wrong ID: the listing is fresh, its ID is not
		}
		return mismatch(fmt.Sprintf("the first listing after the runtime created pod %s does not hold it: "+
			"the adapter serves a listing older than the call, and ipamd would release the new pod's IP", pod.Spec.Name),
			pod.SandboxID, listedIDs(list))
	}
	if err := s.stopPod(ctx, pod); err != nil {
		return err
	}
	if err := item.Release(ctx); err != nil {
		return fmt.Errorf("fixture %s: %w", s.fixture.Name(), err)
	}
	removed := time.Now()
	list, err = s.list(ctx)
	if err != nil {
		return err
	}
	goneAfter := time.Since(removed)
	if sb, ok := stillListed(list, pod); ok {
		return mismatch(fmt.Sprintf("the first listing after the runtime removed pod %s still holds it: "+
			"the adapter serves a listing older than the call", pod.Spec.Name), "not listed", describeListed(sb, true))
	}
	s.note("created pod listed by a ListSandboxes that returned %s after the create call; removed pod gone from one that returned %s after the removal",
		listedAfter.Round(time.Millisecond), goneAfter.Round(time.Millisecond))
	return nil
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
