package reclaim_test

import (
	"context"
	"slices"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/sandboxipam/sandboxipam/cluster/reclaim"
	"github.com/sandboxipam/sandboxipam/internal/testsupport"
)

// candidate is one reclaimer run under leader election, its passes on a
// channel and its own fake clock.
type candidate struct {
	r       *reclaim.Reclaimer
	clk     *clocktesting.FakeClock
	passes  chan reclaim.Pass
	leaders chan string
	done    chan error
	cancel  context.CancelFunc
}

func startCandidate(t *testing.T, cfg reclaim.Config, id string) *candidate {
	t.Helper()
	c := &candidate{clk: clocktesting.NewFakeClock(t0), passes: make(chan reclaim.Pass, 64), leaders: make(chan string, 16), done: make(chan error, 1)}
	c.r = newReclaimer(t, apiServer(t), cfg, id, c.clk, &testsupport.Buffer{}, func(p reclaim.Pass) { c.passes <- p })
	ctx, cancel := context.WithCancel(context.Background())
	c.cancel = cancel
	go func() { c.done <- c.r.Run(ctx, reclaim.Elector{OnNewLeader: func(id string) { c.leaders <- id }}) }()
	t.Cleanup(func() { cancel(); <-c.done })
	return c
}

// next waits for the candidate's next pass; the deadline only ends a
// broken test.
func (c *candidate) next(t *testing.T) reclaim.Pass {
	t.Helper()
	select {
	case p := <-c.passes:
		return p
	case <-time.After(testsupport.WaitDeadline):
		t.Fatal("no pass")
		return reclaim.Pass{}
	}
}

// step moves the candidate's clock to its next pass, once the loop waits
// on it, and returns that pass.
func (c *candidate) step(t *testing.T) reclaim.Pass {
	t.Helper()
	testsupport.Eventually(t, "the leader's loop to wait for its next pass", c.clk.HasWaiters)
	c.clk.Step(time.Minute)
	return c.next(t)
}

func waitLeader(t *testing.T, c *candidate, want string) {
	t.Helper()
	for {
		select {
		case id := <-c.leaders:
			if id == want {
				return
			}
		case <-time.After(testsupport.WaitDeadline):
			t.Fatalf("never observed %s as leader", want)
		}
	}
}

// TestOnlyTheLeaderReclaims runs two reclaimers against one leader Lease:
// only the leader passes and reclaims; the other runs no loop, reads
// nothing and deletes nothing. When the leader stops, it releases the
// Lease and the other takes over and reclaims in its turn.
func TestOnlyTheLeaderReclaims(t *testing.T) {
	env := apiServer(t)
	cfg := testConfig(2 * time.Minute)
	cfg.LeaderElection.Namespace, cfg.LeaderElection.Name = "default", "reclaimer-leader-test"
	// Long enough that no candidate takes over by expiry during the test:
	// only a release hands the Lease on.
	cfg.LeaderElection.LeaseDuration, cfg.LeaderElection.RenewDeadline, cfg.LeaderElection.RetryPeriod = 10*time.Minute, 5*time.Minute, 200*time.Millisecond
	first := confirmGone(t, env, env.Block(t, "default", "198.18.2.0/26", "ghost-1", "ghost-1-uid"))

	one := startCandidate(t, cfg, "reclaimer-1")
	if p := one.next(t); !keepReason(p, first.Name, "Lease kube-node-lease/ghost-1 absent, but only for 0s in the reclaimer's sight, not longer than the grace 2m0s") {
		t.Fatalf("reclaimer-1's first pass: %+v", p)
	}
	two := startCandidate(t, cfg, "reclaimer-2")
	waitLeader(t, two, "reclaimer-1")
	// No ipamd Lease seen: the wait is the longest ipamd accepts (5m),
	// not the grace (ipamdlease.ReclaimWait).
	for range 5 {
		one.step(t)
	}
	if p := one.step(t); !slices.Equal(p.Reclaimed, []string{first.Name}) {
		t.Fatalf("reclaimer-1 at t0+6m: %+v", p)
	}
	if evs := events(t, env, first); len(evs) != 1 || evs[0].ReportingInstance != "reclaimer-1" {
		t.Fatalf("Events on %s: %+v, want one from reclaimer-1", first.Name, evs)
	}
	if two.clk.HasWaiters() || len(two.passes) != 0 {
		t.Fatalf("reclaimer-2, not leading, ran passes: waiting %v, %d passes", two.clk.HasWaiters(), len(two.passes))
	}
	if l1, l2 := gauge(t, one.r.Metrics().Registry(), "sandboxipam_reclaimer_leader"), gauge(t, two.r.Metrics().Registry(), "sandboxipam_reclaimer_leader"); l1 != 1 || l2 != 0 {
		t.Fatalf("sandboxipam_reclaimer_leader: reclaimer-1 %v, reclaimer-2 %v", l1, l2)
	}

	// The leader stops and releases; the other leads from then on.
	second := confirmGone(t, env, env.Block(t, "default", "198.18.2.64/26", "ghost-2", "ghost-2-uid"))
	one.cancel()
	if err := <-one.done; err != nil {
		t.Fatalf("reclaimer-1 Run: %v", err)
	}
	one.done <- nil // for the cleanup
	waitLeader(t, two, "reclaimer-2")
	if p := two.next(t); !keepReason(p, second.Name, "Lease kube-node-lease/ghost-2 absent, but only for 0s in the reclaimer's sight, not longer than the grace 2m0s") {
		t.Fatalf("reclaimer-2's first pass: %+v", p)
	}
	// No ipamd Lease seen: the wait is the longest ipamd accepts (5m),
	// not the grace (ipamdlease.ReclaimWait).
	for range 5 {
		two.step(t)
	}
	if p := two.step(t); !slices.Equal(p.Reclaimed, []string{second.Name}) {
		t.Fatalf("reclaimer-2 at t0+6m: %+v", p)
	}
	if evs := events(t, env, second); len(evs) != 1 || evs[0].ReportingInstance != "reclaimer-2" {
		t.Fatalf("Events on %s: %+v, want one from reclaimer-2", second.Name, evs)
	}
	if evs := events(t, env, first); len(evs) != 1 {
		t.Fatalf("%d Events on %s, want still 1", len(evs), first.Name)
	}
}
