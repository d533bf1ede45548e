package reclaim

import (
	"context"
	"errors"
	"fmt"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// ErrLostLeadership: Run stopped leading while its context was still
// live. The caller exits (and is restarted), as Kubernetes' own
// controllers do: its informers cannot be started twice, and a fresh
// start waits the full grace before reclaiming anything.
var ErrLostLeadership = errors.New("reclaimer: lost the leader Lease")

// Elector hooks, for tests and logs.
type Elector struct {
	// OnNewLeader is called with the identity of each leader observed.
	OnNewLeader func(identity string)
}

// Run contends for the leader Lease and, while it leads, starts the
// informers and runs Loop. It returns nil when ctx ends (releasing the
// Lease, so another reclaimer takes over at once) and ErrLostLeadership
// when leadership is lost otherwise.
func (r *Reclaimer) Run(ctx context.Context, hooks Elector) error {
	le := r.cfg.LeaderElection
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: le.Namespace, Name: le.Name},
		Client:     r.clients.Kube.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: r.opts.Identity},
	}
	// The elector starts OnStartedLeading in a goroutine of its own and
	// does not wait for it: Run does, so that nothing acts after it
	// returns.
	var mu sync.Mutex
	var done chan struct{}
	var leadErr error
	elector, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock: lock, Name: le.Name, ReleaseOnCancel: true,
		LeaseDuration: le.LeaseDuration, RenewDeadline: le.RenewDeadline, RetryPeriod: le.RetryPeriod,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(ctx context.Context) {
				mu.Lock()
				done = make(chan struct{})
				mu.Unlock()
				err := r.lead(ctx)
				mu.Lock()
				leadErr = err
				close(done)
				mu.Unlock()
			},
			OnStoppedLeading: func() { r.metrics.leader.Set(0) },
			OnNewLeader: func(id string) {
				r.log.Info("reclaimer: leader observed", "leader", id, "self", r.opts.Identity)
				if hooks.OnNewLeader != nil {
					hooks.OnNewLeader(id)
				}
			},
		},
	})
	if err != nil {
		return fmt.Errorf("reclaimer: leader election: %w", err)
	}
	elector.Run(ctx)
	mu.Lock()
	wait := done
	mu.Unlock()
	if wait != nil {
		<-wait
	}
	mu.Lock()
	defer mu.Unlock()
	if leadErr != nil {
		return leadErr
	}
	if ctx.Err() == nil {
		return ErrLostLeadership
	}
	return nil
}

// lead is what the leader does until ctx ends.
func (r *Reclaimer) lead(ctx context.Context) error {
	r.metrics.leader.Set(1)
	r.log.Info("reclaimer: leading; no block is reclaimed before its node's Lease has been watched for the grace", "self", r.opts.Identity, "grace", r.cfg.Grace)
	if err := r.Start(ctx); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	r.Loop(ctx)
	return nil
}
