// Package reconcile releases the addresses of pod sandboxes the container
// runtime no longer has, and rebuilds the datastore from the runtime after
// its checkpoint was lost.
//
// A pass lists sandboxes through the runtime adapter. Only a successful
// listing counts: a failed or timed-out one releases nothing, because an
// empty or partial picture of the node would free addresses that live pods
// still use. An assignment is released when its sandbox ID is absent from
// the listing and it is older than the grace period, measured from when
// the listing started, so a pod that got its address while the listing was
// in flight is never mistaken for a leak. Host-network sandboxes own no pod
// IP: their presence neither protects nor adopts anything. A NotReady
// sandbox still owns its IP.
//
// All of a pass's releases go to the datastore as one batch, one write.
package reconcile

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/sandboxipam/sandboxipam/ipamd/datastore"
	"github.com/sandboxipam/sandboxipam/runtime"
)

// Defaults for Config's zero values.
const (
	DefaultInterval    = 60 * time.Second
	DefaultGrace       = 30 * time.Second
	DefaultListTimeout = 10 * time.Second
	DefaultIfName      = "eth0"
)

// Config configures a Reconciler.
type Config struct {
	// Interval between passes; default 60s.
	Interval time.Duration
	// Grace: an assignment younger than this is never released; default 30s.
	Grace time.Duration
	// ListTimeout bounds one adapter listing; default 10s.
	ListTimeout time.Duration
	// Network names the network of assignments adopted after a lost
	// checkpoint. Required for adoption.
	Network string
	// IfName is the interface of adopted assignments; default "eth0".
	IfName string
	// Logger receives the reconciler's log; nil discards it.
	Logger *slog.Logger
	// OnResult is called after every pass (a metrics hook); optional.
	OnResult func(Result)
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Result is one pass's outcome.
type Result struct {
	At     time.Time
	DryRun bool
	// Listed counts sandboxes in the listing.
	Listed int
	// Released holds the assignments released (or, in a dry run, that
	// would be).
	Released []datastore.Assignment
	// Adopted counts assignments rebuilt from the listing.
	Adopted int
	// Err says why the pass released nothing: the listing failed.
	Err string
}

// Reconciler runs passes against one store and one adapter.
type Reconciler struct {
	store   *datastore.Store
	adapter runtime.RuntimeAdapter
	cfg     Config

	mu      sync.Mutex
	last    Result
	hasLast bool
	// adoptOnce is set when the store started without a checkpoint: the
	// first successful pass adopts the listed sandboxes' IPs so they are
	// never handed out again.
	adoptOnce bool
}

// New returns a Reconciler; zero Config fields take their defaults.
func New(store *datastore.Store, adapter runtime.RuntimeAdapter, cfg Config) *Reconciler {
	if cfg.Interval <= 0 {
		cfg.Interval = DefaultInterval
	}
	if cfg.Grace <= 0 {
		cfg.Grace = DefaultGrace
	}
	if cfg.ListTimeout <= 0 {
		cfg.ListTimeout = DefaultListTimeout
	}
	if cfg.IfName == "" {
		cfg.IfName = DefaultIfName
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Reconciler{
		store: store, adapter: adapter, cfg: cfg,
		adoptOnce: store.Recovery().Checkpoint == datastore.RecoveryMissing,
	}
}

// Last returns the most recent pass's result.
func (r *Reconciler) Last() (Result, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.last, r.hasLast
}

// Run makes one pass at once and then one every Interval until ctx is
// done. Errors are logged and reported through OnResult and Last.
func (r *Reconciler) Run(ctx context.Context) {
	ticker := time.NewTicker(r.cfg.Interval)
	defer ticker.Stop()
	for {
		if _, err := r.RunOnce(ctx, false); err != nil && ctx.Err() == nil {
			r.cfg.Logger.Warn("reconcile pass failed", slog.Any("error", err))
		}
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
	}
}

// RunOnce makes one pass. In a dry run nothing is adopted or released;
// Result.Released holds what would be. An error means the listing failed
// (nothing was released) or the datastore could not record the pass.
func (r *Reconciler) RunOnce(ctx context.Context, dryRun bool) (Result, error) {
	res, err := r.pass(ctx, dryRun)
	r.mu.Lock()
	r.last, r.hasLast = res, true
	r.mu.Unlock()
	if r.cfg.OnResult != nil {
		r.cfg.OnResult(res)
	}
	return res, err
}

func (r *Reconciler) pass(ctx context.Context, dryRun bool) (Result, error) {
	started := r.cfg.Now()
	res := Result{At: started, DryRun: dryRun}
	sandboxes, err := r.list(ctx)
	if err != nil {
		res.Err = err.Error()
		r.cfg.Logger.Warn("runtime listing failed: releasing nothing this pass", slog.Any("error", err))
		return res, err
	}
	res.Listed = len(sandboxes)
	if !dryRun {
		adopted, err := r.adopt(ctx, sandboxes)
		res.Adopted = adopted
		if err != nil {
			res.Err = err.Error()
			return res, err
		}
	}
	stale := Stale(r.store.Assignments(), sandboxes, started.Add(-r.cfg.Grace))
	if dryRun {
		res.Released = stale
		r.logReleases("would release (dry run)", stale)
		return res, nil
	}
	released, err := r.store.ReleaseAssignments(ctx, stale)
	res.Released = released
	if err != nil {
		res.Err = err.Error()
		return res, fmt.Errorf("reconcile: %w", err)
	}
	r.logReleases("released the address of a sandbox the runtime no longer has", released)
	return res, nil
}

// list asks the adapter for every sandbox, within ListTimeout.
func (r *Reconciler) list(ctx context.Context) ([]runtime.Sandbox, error) {
	listCtx, cancel := context.WithTimeout(ctx, r.cfg.ListTimeout)
	defer cancel()
	sandboxes, err := r.adapter.ListSandboxes(listCtx)
	if err != nil {
		if errors.Is(listCtx.Err(), context.DeadlineExceeded) && ctx.Err() == nil {
			return nil, fmt.Errorf("list sandboxes: timed out after %s: %w", r.cfg.ListTimeout, err)
		}
		return nil, fmt.Errorf("list sandboxes: %w", err)
	}
	return sandboxes, nil
}

// adopt rebuilds assignments from the listing when the store cannot prove
// its pool (lost checkpoint), still quarantines addresses, or started
// without a checkpoint.
func (r *Reconciler) adopt(ctx context.Context, sandboxes []runtime.Sandbox) (int, error) {
	r.mu.Lock()
	once := r.adoptOnce
	r.mu.Unlock()
	if !once && !r.store.Unproven() && r.store.Stats().Unproven == 0 {
		return 0, nil
	}
	if r.cfg.Network == "" {
		return 0, errors.New("reconcile: the datastore needs adopting but Config.Network is empty")
	}
	rep, err := r.store.Adopt(ctx, r.cfg.Network, r.cfg.IfName, sandboxes, completeListing(sandboxes))
	if err != nil {
		return rep.Adopted, fmt.Errorf("reconcile: %w", err)
	}
	r.mu.Lock()
	r.adoptOnce = false
	r.mu.Unlock()
	r.cfg.Logger.Warn("adopted the runtime listing into the datastore",
		slog.Int("adopted", rep.Adopted), slog.Int("known", rep.Known), slog.Int("conflicts", rep.Conflicts),
		slog.Int("proven_free", rep.ProvenFree), slog.Int("still_quarantined", rep.Quarantined), slog.Bool("proven", rep.Proven))
	return rep.Adopted, nil
}

// completeListing reports whether every pod-network sandbox reported its
// IPs, so the listing proves every other address free. A NotReady sandbox
// may have had its network torn down and report none; then nothing can be
// proven about the address it may still hold.
func completeListing(sandboxes []runtime.Sandbox) bool {
	for _, sb := range sandboxes {
		if !sb.HostNetwork && len(sb.IPs) == 0 {
			return false
		}
	}
	return true
}

func (r *Reconciler) logReleases(msg string, as []datastore.Assignment) {
	for _, a := range as {
		r.cfg.Logger.Info(msg, slog.String("sandbox_id", a.SandboxID), slog.String("network", a.Network),
			slog.String("ifname", a.IfName), slog.String("pod", a.Pod.Namespace+"/"+a.Pod.Name),
			slog.String("pod_uid", a.Pod.UID), slog.String("ip", a.Address.IP.String()))
	}
}

// Stale returns the assignments whose sandbox is absent from a successful
// listing (host-network sandboxes do not count) and that were made before
// cutoff. It uses one map, so 10,000 of each take milliseconds.
func Stale(assignments []datastore.Assignment, sandboxes []runtime.Sandbox, cutoff time.Time) []datastore.Assignment {
	present := make(map[string]struct{}, len(sandboxes))
	for _, sb := range sandboxes {
		if !sb.HostNetwork {
			present[sb.ID] = struct{}{}
		}
	}
	var stale []datastore.Assignment
	for _, a := range assignments {
		if _, ok := present[a.SandboxID]; ok || !a.AssignedAt.Before(cutoff) {
			continue
		}
		stale = append(stale, a)
	}
	return stale
}
