package testsupport

import (
	"testing"
	"time"
)

// WaitDeadline bounds Eventually and Wait. It is generous on purpose: on a
// busy two-core machine a cold build or a daemon start can take tens of
// seconds, and the deadline exists only so a broken test ends.
const WaitDeadline = 2 * time.Minute

// Eventually polls cond until it returns true, failing t after
// WaitDeadline. It waits for a state; it never asserts a duration.
func Eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	Wait(t, what, func() (bool, string) { return cond(), "" })
}

// Wait polls cond until it returns true, failing t after WaitDeadline
// with the last state cond described.
func Wait(t testing.TB, what string, cond func() (done bool, state string)) {
	t.Helper()
	deadline := time.Now().Add(WaitDeadline)
	// Start fast, so a state that is nearly there costs little, and back
	// off so that a long wait does not steal a busy machine's CPU.
	interval := time.Millisecond
	for {
		done, state := cond()
		if done {
			return
		}
		if time.Now().After(deadline) {
			if state != "" {
				t.Fatalf("gave up after %s waiting for %s; last state: %s", WaitDeadline, what, state)
			} else {
				t.Fatalf("gave up after %s waiting for %s", WaitDeadline, what)
			}
			return
		}
		time.Sleep(interval) // polling: the caller's state has no event to wait on
		interval = min(2*interval, 50*time.Millisecond)
	}
}
