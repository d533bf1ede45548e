package conformance

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/sandboxipam/sandboxipam/runtime"
)

// hungDeadline is the deadline the hung-runtime check gives each call:
// long enough for a healthy gRPC hop, short enough to keep the run quick.
const hungDeadline = 500 * time.Millisecond

func checkUnreachable(ctx context.Context, s *session) error {
	args, err := s.unreachableArgs()
	if err != nil {
		return err
	}
	if args == nil {
		return skipf("unreachable endpoint not configured (neither UnreachableArgs nor EndpointArgs set)")
	}
	client, _, err := s.launch(ctx, args)
	if err != nil {
		// Refusing to start is safe: ipamd sees no adapter, not "no pods".
		s.note("the adapter refused to start against an unreachable endpoint: %v", err)
		return nil
	}
	callCtx, cancel := s.callCtx(ctx)
	defer cancel()
	list, err := client.ListSandboxes(callCtx)
	if err == nil {
		return mismatch("ListSandboxes against an unreachable runtime returned a list and no error: "+
			"ipamd would take it for \"no pods\" and release every IP",
			"an error wrapping runtime.ErrUnavailable", fmt.Sprintf("%d sandboxes, no error", len(list)))
	}
	if !errors.Is(err, runtime.ErrUnavailable) {
		return mismatch("ListSandboxes against an unreachable runtime failed without runtime.ErrUnavailable",
			"an error wrapping runtime.ErrUnavailable", err.Error())
	}
	sb, err := client.GetSandbox(callCtx, randomSandboxID())
	switch {
	case errors.Is(err, runtime.ErrNotFound):
		return mismatch("GetSandbox against an unreachable runtime reported ErrNotFound: ipamd would take the pod for gone",
			"an error wrapping runtime.ErrUnavailable", err.Error())
	case !errors.Is(err, runtime.ErrUnavailable):
		return mismatch("GetSandbox against an unreachable runtime did not report runtime.ErrUnavailable",
			"an error wrapping runtime.ErrUnavailable", describeGet(sb, err))
	}
	return expectFailFast(ctx, s, client, "against an unreachable runtime")
}

func checkWrongRuntime(ctx context.Context, s *session) error {
	if len(s.cfg.WrongRuntimeArgs) == 0 {
		return skipf("wrong runtime not configured (no WrongRuntimeArgs, --wrong-runtime-arg)")
	}
	client, _, err := s.launch(ctx, s.cfg.WrongRuntimeArgs)
	if err != nil {
		s.note("the adapter refused to start against the wrong runtime: %v", err)
		return nil
	}
	callCtx, cancel := s.callCtx(ctx)
	defer cancel()
	list, err := client.ListSandboxes(callCtx)
	if !errors.Is(err, runtime.ErrWrongRuntime) {
		actual := fmt.Sprintf("%d sandboxes, no error", len(list))
		if err != nil {
			actual = "error: " + err.Error()
		}
		return mismatch("ListSandboxes against another runtime did not report runtime.ErrWrongRuntime",
			"an error wrapping runtime.ErrWrongRuntime", actual)
	}
	return expectFailFast(ctx, s, client, "against another runtime")
}

func checkDeadlineShort(ctx context.Context, s *session) error {
	shared, baseline, err := s.sharedListed(ctx)
	if err != nil {
		return err
	}
	pods := shared.all()
	// The longer deadlines tend to expire inside the adapter rather than on
	// the host, before the call even leaves.
	for _, deadline := range []time.Duration{time.Millisecond, 10 * time.Millisecond, 100 * time.Millisecond} {
		var list []runtime.Sandbox
		outcome := callWithin(ctx, deadline, s.cfg.DeadlineSlack, func(ctx context.Context) error {
			var err error
			list, err = s.adapter.ListSandboxes(ctx)
			return err
		})
		if !outcome.returned {
			return mismatch(fmt.Sprintf("ListSandboxes with a %s deadline did not return in time", deadline),
				fmt.Sprintf("returned within %s", deadline+s.cfg.DeadlineSlack), "still running")
		}
		s.note("ListSandboxes with a %s deadline returned after %s: %s", deadline, outcome.elapsed.Round(time.Millisecond), outcome)
		if outcome.err != nil {
			continue
		}
		// A listing cut short must not pass for a complete one: an empty
		// or partial list would make ipamd release live pods' IPs.
		if err := agreeOnPods(pods, baseline, list); err != nil {
			return prefixed(fmt.Sprintf("ListSandboxes with a %s deadline returned %d sandboxes and no error", deadline, len(list)), err)
		}
	}
	return nil
}

func checkDeadlineHung(ctx context.Context, s *session) error {
	if s.cfg.EndpointArgs == nil {
		return skipf("hung-runtime endpoint not configured (no EndpointArgs)")
	}
	hung, err := s.startHung()
	if err != nil {
		return err
	}
	client, _, err := s.launch(ctx, s.cfg.EndpointArgs(hung.Endpoint()))
	if err != nil {
		s.note("the adapter refused to start against a hung runtime: %v", err)
		return nil
	}
	calls := []struct {
		name string
		call func(context.Context) error
	}{
		{"ListSandboxes", func(ctx context.Context) error {
			list, err := client.ListSandboxes(ctx)
			if err == nil {
				return fmt.Errorf("%w: %d sandboxes", errNoErrorFromHung, len(list))
			}
			return nil
		}},
		{"GetSandbox", func(ctx context.Context) error {
			sb, err := client.GetSandbox(ctx, randomSandboxID())
			if err == nil {
				return fmt.Errorf("%w: sandbox %s", errNoErrorFromHung, sb.ID)
			}
			return nil
		}},
	}
	for _, c := range calls {
		if err := expectHungCallFails(ctx, s, c.name, c.call); err != nil {
			return err
		}
	}
	return nil
}

// errNoErrorFromHung marks a call that answered although the runtime never did.
var errNoErrorFromHung = errors.New("returned no error")

// expectHungCallFails runs call against the hung runtime and requires it to
// fail by its deadline.
func expectHungCallFails(ctx context.Context, s *session, name string, call func(context.Context) error) error {
	outcome := callWithin(ctx, hungDeadline, s.cfg.DeadlineSlack, call)
	switch {
	case !outcome.returned:
		return mismatch(fmt.Sprintf("%s against a runtime that never answers ignored its %s deadline", name, hungDeadline),
			fmt.Sprintf("an error within %s", hungDeadline+s.cfg.DeadlineSlack), "still running")
	case errors.Is(outcome.err, errNoErrorFromHung):
		return mismatch(fmt.Sprintf("%s against a runtime that never answers succeeded: ipamd would trust an answer nobody gave", name),
			"an error", outcome.err.Error())
	}
	s.note("%s against a hung runtime failed after %s", name, outcome.elapsed.Round(time.Millisecond))
	return nil
}

// callOutcome is what callWithin observed.
type callOutcome struct {
	returned bool
	err      error
	elapsed  time.Duration
}

// String says how the call ended.
func (o callOutcome) String() string {
	if o.err != nil {
		return "error: " + o.err.Error()
	}
	return "no error"
}

// callWithin runs call with deadline and waits at most deadline+slack for
// it to return. A call that does not return is left running: the adapter
// process it hangs in is closed by the check's clean-up.
func callWithin(ctx context.Context, deadline, slack time.Duration, call func(context.Context) error) callOutcome {
	callCtx, cancel := context.WithTimeout(ctx, deadline)
	done := make(chan error, 1)
	start := time.Now()
	go func() {
		defer cancel()
		done <- call(callCtx)
	}()
	wait := time.NewTimer(deadline + slack)
	defer wait.Stop()
	select {
	case err := <-done:
		return callOutcome{returned: true, err: err, elapsed: time.Since(start)}
	case <-wait.C:
		return callOutcome{elapsed: time.Since(start)}
	}
}

// randomSandboxID returns a 64-hex-digit ID no runtime has.
func randomSandboxID() string {
	var b [32]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
