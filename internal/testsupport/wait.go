package testsupport

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

// WaitDeadline bounds Eventually and Wait. It is generous on purpose: on a
// busy two-core machine a cold build or a daemon start can take tens of
// seconds, and the deadline exists only so a broken test ends.
const WaitDeadline = 2 * time.Minute

// ErrGiveUp, wrapped in the error a Poll condition returns, ends the poll
// at once with that error: the condition can no longer become true (the
// process it waits on exited, say).
var ErrGiveUp = errors.New("gave up waiting")

// Poll is the project's one poll, for a state that no event announces. It
// calls cond until cond returns nil, and then returns nil. When ctx ends
// first it returns an error naming what, with cond's last error; cond gets
// ctx, so its own calls end with the wait. An error wrapping ErrGiveUp
// ends the poll at once.
//
// Polls start fast, so a state that is nearly there costs little, and back
// off as the wait grows, so a long wait does not steal a busy machine's
// CPU: from 1 ms, doubling, up to a tenth of the time waited so far, kept
// between 50 ms and 500 ms.
func Poll(ctx context.Context, what string, cond func(ctx context.Context) error) error {
	start := time.Now()
	interval := time.Millisecond
	var last error
	for {
		err := cond(ctx)
		if err == nil {
			return nil
		}
		if errors.Is(err, ErrGiveUp) {
			return fmt.Errorf("%s: %w", what, err)
		}
		// A call cut short by the deadline says nothing about the
		// condition: report the attempt before it.
		if last == nil || ctx.Err() == nil {
			last = err
		}
		timer := time.NewTimer(interval)
		select {
		case <-ctx.Done():
			timer.Stop()
			return fmt.Errorf("%s: not within %s (%v): %w", what, time.Since(start).Round(time.Millisecond), context.Cause(ctx), last)
		case <-timer.C:
		}
		interval = min(2*interval, max(50*time.Millisecond, min(time.Since(start)/10, 500*time.Millisecond)))
	}
}

// WaitFor polls cond (Poll) for at most timeout, WaitDeadline when zero,
// and fails t when it does not come true.
func WaitFor(t testing.TB, timeout time.Duration, what string, cond func(ctx context.Context) error) {
	t.Helper()
	if timeout <= 0 {
		timeout = WaitDeadline
	}
	// Not t.Context(): a wait in a t.Cleanup would find it cancelled.
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := Poll(ctx, what, cond); err != nil {
		t.Fatalf("%v", err)
	}
}

// Eventually polls cond until it returns true, failing t after
// WaitDeadline. It waits for a state; it never asserts a duration.
func Eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	Wait(t, what, func() (bool, string) { return cond(), "" })
}

// errNotYet is the last state of a Wait condition that described none.
var errNotYet = errors.New("condition still false")

// Wait polls cond until it returns true, failing t after WaitDeadline
// with the last state cond described.
func Wait(t testing.TB, what string, cond func() (done bool, state string)) {
	t.Helper()
	WaitFor(t, WaitDeadline, what, func(context.Context) error {
		done, state := cond()
		switch {
		case done:
			return nil
		case state == "":
			return errNotYet
		}
		return errors.New("last state: " + state)
	})
}
