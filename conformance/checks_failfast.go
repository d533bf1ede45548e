package conformance

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/sandboxipam/sandboxipam/runtime"
)

// failFastDeadlines are the deadlines the fail-fast checks call with, on
// top of Config.Timeout: an adapter that answers "no pods" once its
// deadline is near (its own client gave up, it swallowed the error) passes
// with a long deadline and fails ipamd with a short one. ipamd's calls carry
// deadlines like these; just under two seconds is where a deadline still
// beats the suite's own DeadlineSlack.
var failFastDeadlines = []time.Duration{100 * time.Millisecond, time.Second, 1900 * time.Millisecond}

// expectFailFast calls ListSandboxes and GetSandbox on adapter with each of
// failFastDeadlines, while the runtime cannot answer (where says why), and
// requires every call to return an error by its deadline: never a list,
// never "not found".
func expectFailFast(ctx context.Context, s *session, adapter runtime.RuntimeAdapter, where string) error {
	var took []string
	for _, deadline := range failFastDeadlines {
		var list []runtime.Sandbox
		listed := callWithin(ctx, deadline, s.cfg.DeadlineSlack, func(ctx context.Context) error {
			var err error
			list, err = adapter.ListSandboxes(ctx)
			return err
		})
		if err := judgeFailFastList(s, where, deadline, listed, list); err != nil {
			return err
		}
		var sb runtime.Sandbox
		got := callWithin(ctx, deadline, s.cfg.DeadlineSlack, func(ctx context.Context) error {
			var err error
			sb, err = adapter.GetSandbox(ctx, randomSandboxID())
			return err
		})
		if err := judgeFailFastGet(s, where, deadline, got, sb); err != nil {
			return err
		}
		took = append(took, fmt.Sprintf("%s: %s and %s", deadline, listed.elapsed.Round(time.Millisecond), got.elapsed.Round(time.Millisecond)))
	}
	s.note("%s, ListSandboxes and GetSandbox failed by their deadlines (%s)", where, strings.Join(took, "; "))
	return nil
}

// judgeFailFastList judges one ListSandboxes call of expectFailFast.
func judgeFailFastList(s *session, where string, deadline time.Duration, o callOutcome, list []runtime.Sandbox) error {
	switch {
	case !o.returned:
		return mismatch(fmt.Sprintf("ListSandboxes %s ignored its %s deadline", where, deadline),
			fmt.Sprintf("an error within %s", deadline+s.cfg.DeadlineSlack), "still running")
	case o.err == nil && len(list) == 0:
		return mismatch(fmt.Sprintf("ListSandboxes %s with a %s deadline returned an empty list and no error: "+
			"ipamd would take it for \"no pods\" and release every IP", where, deadline),
			"an error", "0 sandboxes, no error")
	case o.err == nil:
		return mismatch(fmt.Sprintf("ListSandboxes %s with a %s deadline returned a list and no error: "+
			"ipamd would trust an answer the runtime never gave", where, deadline),
			"an error", fmt.Sprintf("%d sandboxes, no error", len(list)))
	}
	return nil
}

// judgeFailFastGet judges one GetSandbox call of expectFailFast.
func judgeFailFastGet(s *session, where string, deadline time.Duration, o callOutcome, sb runtime.Sandbox) error {
	switch {
	case !o.returned:
		return mismatch(fmt.Sprintf("GetSandbox %s ignored its %s deadline", where, deadline),
			fmt.Sprintf("an error within %s", deadline+s.cfg.DeadlineSlack), "still running")
	case errors.Is(o.err, runtime.ErrNotFound):
		return mismatch(fmt.Sprintf("GetSandbox %s with a %s deadline reported ErrNotFound: ipamd would take the pod for gone", where, deadline),
			"an error other than runtime.ErrNotFound", o.err.Error())
	case o.err == nil:
		return mismatch(fmt.Sprintf("GetSandbox %s with a %s deadline returned a sandbox and no error", where, deadline),
			"an error", describeGet(sb, nil))
	}
	return nil
}
