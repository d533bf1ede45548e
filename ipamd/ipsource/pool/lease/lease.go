// Package lease is ipamd's own evidence of life in the cluster pool: each
// ipamd of ipSource.type "pool" renews one coordination.k8s.io Lease of
// its own (ipamdlease.IpamdLeaseName of its node, in the namespace it runs
// in), recording its Node's name (spec.holderIdentity) and UID (the
// annotation ipamdlease.LeaseNodeUIDAnnotation). The reclaimer keeps a
// node's blocks while that Lease changes in its sight: a Node object, its
// kubelet Lease and its Pods can all be deleted while ipamd and the pods
// it served run on.
//
// The Lease is renewed by a plain loop: a read once, then updates that
// carry the resourceVersion last written (the API server refuses a stale
// one with a Conflict, and the next renew reads again), every
// renewInterval. Leader election (client-go's leaderelection) is not the
// tool: it arbitrates one holder among candidates for one Lease, while
// here each node holds its own Lease and nobody else ever contends for
// it; its callbacks (lost leadership, new leader) have nothing to say.
//
// The Renewer also fences: measured on ipamd's monotonic clock from the
// moment the last successful renew was sent, once fenceAfter has passed
// it calls OnFence, and the pool source hands out no new address of its
// blocks until the Lease is renewed and the blocks are read again from
// the API server (see package pool and docs/safety.md "Reclaiming a dead node's
// blocks" for the arithmetic against the reclaimer's grace). The renew
// time sent is the one that counts, not the answer's: the reclaimer can
// only have seen the change after the request left.
package lease

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"net/netip"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"

	"github.com/sandboxipam/sandboxipam/cluster/api/ipamdlease"
)

// Options are a Renewer's settings.
type Options struct {
	// Namespace is where the Lease lives: the namespace ipamd runs in.
	Namespace string
	// Node is this node's name.
	Node string
	// RenewInterval is the time between renews; each renew is given at
	// most this long. FenceAfter is how long after the last successful
	// renew was sent OnFence is called.
	RenewInterval, FenceAfter time.Duration
	// Clock is ipamd's monotonic clock; the real one when nil.
	Clock clock.WithTicker
	// Logger; nil discards.
	Logger *slog.Logger
	// OnFence is called from Run, with the reason, once FenceAfter has
	// passed without a successful renew (again after each renew that
	// lapsed); nil for none.
	OnFence func(why string)
	// AliveAddresses are where this ipamd answers the reclaimer's alive
	// probe (package aliveness), recorded in the Lease's annotation
	// ipamdlease.LeaseAddressesAnnotation; none removes it.
	AliveAddresses []netip.AddrPort
}

// Renewer renews this node's ipamd Lease and says when it has lapsed.
type Renewer struct {
	opts Options
	kube kubernetes.Interface
	log  *slog.Logger

	mu sync.Mutex
	// uid is the Node UID the blocks are claimed under (SetUID).
	uid string
	// lease is the Lease last written or read; nil: read it first.
	lease *coordinationv1.Lease
	// sent is when the last successful renew was sent; zero before one.
	sent time.Time
	// lapsed: OnFence was called for the renew at sent.
	lapsed  bool
	lastErr error
	// refused: the API server answers the renews Unauthorized (said once
	// per run of refusals, at ERROR). Run's goroutine alone reads it.
	refused bool
}

// New returns a Renewer; nothing is written until Run or Renew.
func New(kube kubernetes.Interface, opts Options) (*Renewer, error) {
	if opts.Namespace == "" || opts.Node == "" {
		return nil, fmt.Errorf("ipamd lease: namespace %q and node %q must both be set", opts.Namespace, opts.Node)
	}
	if opts.RenewInterval <= 0 || opts.FenceAfter <= opts.RenewInterval {
		return nil, fmt.Errorf("ipamd lease: renewInterval %s must be positive and below fenceAfter %s", opts.RenewInterval, opts.FenceAfter)
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.OnFence == nil {
		opts.OnFence = func(string) {}
	}
	return &Renewer{opts: opts, kube: kube, log: opts.Logger}, nil
}

// Name is the Lease's "namespace/name".
func (r *Renewer) Name() string {
	return r.opts.Namespace + "/" + ipamdlease.IpamdLeaseName(r.opts.Node)
}

// SetUID sets the Node UID the next renews record.
func (r *Renewer) SetUID(uid string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.uid = uid
}

// Fresh reports whether the last successful renew was sent no longer
// than FenceAfter ago, by the Renewer's clock.
func (r *Renewer) Fresh() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return !r.sent.IsZero() && r.opts.Clock.Since(r.sent) <= r.opts.FenceAfter
}

// Duration is what the Lease's spec.leaseDurationSeconds says: the
// longest time after a renew was sent that this ipamd may still hand out
// addresses (the fence, plus a renew attempt's bound during which the
// lapse is not yet noticed), rounded up to a second.
func (r *Renewer) Duration() time.Duration {
	return time.Duration(math.Ceil((r.opts.FenceAfter + r.opts.RenewInterval).Seconds())) * time.Second
}

// Run renews every RenewInterval and fences when the renews lapse, until
// ctx ends.
func (r *Renewer) Run(ctx context.Context) {
	for {
		if err := r.Renew(ctx); err != nil && ctx.Err() == nil {
			r.logRenewError(err)
		} else if err == nil {
			r.refused = false
		}
		r.checkLapse()
		select {
		case <-ctx.Done():
			return
		case <-r.opts.Clock.After(r.wait()):
		}
	}
}

// logRenewError says why a renew failed. A refusal of the credentials is
// said once, at ERROR, with what it likely means: ipamd's token is bound
// to its pod, and a pod deleted (with its Node, by PodGC or by hand)
// makes every request of its ipamd Unauthorized, so this ipamd can
// neither renew nor read its blocks nor record an Event. Its blocks may
// be reclaimed and handed out elsewhere while its node's pods still use
// their addresses, until the kubelet kills them (issue 44); the
// reclaimer, which can still write, reports a reclaimed node that
// answers again (Event ReclaimedNodeAnswers).
func (r *Renewer) logRenewError(err error) {
	if apierrors.IsUnauthorized(err) {
		if !r.refused {
			r.refused = true
			r.log.Error("the API server refuses this ipamd's credentials (Unauthorized): if its pod was deleted, its blocks may be reclaimed "+
				"and handed out on another node while this node's pods still use their addresses; this ipamd hands out no address once its Lease lapses",
				slog.String("lease", r.Name()), slog.Any("error", err))
		}
		return
	}
	r.refused = false
	r.log.Warn("could not renew this ipamd's Lease; trying again", slog.String("lease", r.Name()), slog.Any("error", err))
}

// wait is the time until the next renew: RenewInterval, or less when the
// fence falls sooner.
func (r *Renewer) wait() time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	d := r.opts.RenewInterval
	if !r.sent.IsZero() && !r.lapsed {
		left := r.opts.FenceAfter - r.opts.Clock.Since(r.sent) + time.Nanosecond
		d = max(min(d, left), 0)
	}
	return d
}

// checkLapse calls OnFence once per lapse.
func (r *Renewer) checkLapse() {
	r.mu.Lock()
	since := r.opts.Clock.Since(r.sent)
	lapse := !r.sent.IsZero() && !r.lapsed && since > r.opts.FenceAfter
	if lapse {
		r.lapsed = true
	}
	lastErr := r.lastErr
	r.mu.Unlock()
	if !lapse {
		return
	}
	why := fmt.Sprintf("this ipamd's Lease %s was last renewed %s ago, longer than ipSource.pool.lease.fenceAfter %s (last error: %v): the reclaimer may soon take this node's blocks",
		r.Name(), since, r.opts.FenceAfter, lastErr)
	r.log.Error("fenced: no new address of this node's blocks until its Lease is renewed and its blocks read again", slog.String("why", why))
	r.opts.OnFence(why)
}
