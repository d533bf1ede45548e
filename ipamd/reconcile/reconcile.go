// Package reconcile releases the addresses of pod sandboxes the container
// runtime no longer has, and proves the datastore's pool from the runtime
// and the node when there is no trusted checkpoint.
//
// A pass lists sandboxes through the runtime adapter. Only a successful
// listing counts: a failed or timed-out one releases nothing, because an
// empty or partial picture of the node would free addresses that live pods
// still use. Each successful listing is joined with the assignments and
// the node's pod links by join.Join (the one join ipamctl check and
// the datastore's proof use too), turned into evidence (see
// buildEvidence) and handed to the datastore (Store.Observe), which marks
// the assignments whose sandbox it shows, adopts and proves after a lost
// checkpoint, and quarantines any address a pod holds that the store does
// not record under it.
//
// The adapter must see what CNI sees, and proves it per adapter (see
// sight.go): until one of its listings shows a sandbox CNI added (not one
// adopted from the runtime), an assignment made by ADD that no listing has
// shown, past the grace, means it may be blind or look at another
// runtime, and the pass releases nothing. Once it has shown it, such a
// never-listed assignment (a pod that lived between two listings and lost
// its DEL) is released when GetSandbox says it is gone, or the plugin
// wired it and the node has no pod link for it; a missing sandbox whose
// pod link or network namespace is on the node, or that GetSandbox finds,
// makes it blind again. Otherwise an assignment is released only when
// a listing once showed its sandbox, a later successful listing does not,
// it is older than the grace period (measured from when the listing
// started, so a pod that got its address while the listing was in flight
// is never mistaken for a leak), and the node has neither its pod link
// nor the network namespace its ADD named (netns.go: a namespace only
// ever keeps an address; its absence proves nothing).
// Host-network sandboxes own no pod IP: their presence neither protects
// nor adopts anything. A NotReady sandbox still owns its IP.
//
// All of a pass's releases go to the datastore as one batch, one write.
//
// See docs/architecture.md for where this package sits and the life of an
// ADD, a DEL, a reconcile pass and a restart through it.
package reconcile

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/sandboxipam/sandboxipam/ipamd/api/hostveth"
	"github.com/sandboxipam/sandboxipam/ipamd/datastore"
	"github.com/sandboxipam/sandboxipam/ipamd/join"
	"github.com/sandboxipam/sandboxipam/ipamd/reconcile/reconcileconf"
	"github.com/sandboxipam/sandboxipam/runtime"
)

// DefaultIfName is the interface of adopted assignments when Config.IfName
// is empty. The other fields' defaults are ipamd's config's, owned by
// package reconcileconf.
const DefaultIfName = "eth0"

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
	// Node reads the node's pod links; nil means the node gives no
	// evidence (a sandbox reporting no IP is then unaccounted for).
	Node NodeReader
	// NetNS reads addresses inside a sandbox's network namespace when the
	// adapter reports its path; nil means it is not read.
	NetNS NetNSReader
	// NetNSIdentity identifies the network namespace at a path
	// (hostlinks.NetNSIdentity on Linux): an assignment whose sandbox the
	// listing does not show is kept while the namespace its ADD named is
	// still on the node. Nil means namespaces are not looked at.
	NetNSIdentity func(path string) (dev, ino uint64, err error)
	// VethPrefix is the CNI plugin's hostVethPrefix; default
	// hostveth.DefaultPrefix.
	VethPrefix string
	// PluginWiresEveryPod: every attachment on the network is known to be
	// wired by the sandboxipam plugin as the main plugin (config
	// podLinks.podWiring), so a pod without its pod link holds no address.
	// False, the default, never infers anything from a missing link: a pod
	// wired by another main plugin has none.
	PluginWiresEveryPod bool
	// StartedAt is when ipamd opened its store; zero means when New ran.
	StartedAt time.Time
	// LinkGrace is how long after StartedAt a pod made before it, that the
	// runtime reports no IP for and that has no pod link, may still be
	// being wired by an ADD answered before a restart; default
	// reconcileconf.DefaultLinkGrace.
	LinkGrace time.Duration
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
	// Confirmed counts assignments whose sandbox was listed for the first
	// time.
	Confirmed int
	// Conflicts counts addresses newly quarantined because a pod holds
	// them while the store does not record them under it.
	Conflicts int
	// Quarantined counts pool addresses quarantined after the pass.
	Quarantined int
	// Unproven: the store hands out nothing yet; Unaccounted says why.
	Unproven    bool
	Unaccounted []string
	// Missing lists, sorted, the sandbox IDs CNI added that the listing
	// should show and does not: the adapter is blind, and nothing was
	// released.
	Missing []string
	// Unlisted holds the assignments whose sandbox this successful
	// listing did not show and that the pass did not release: inside the
	// grace, never listed yet, or kept by a pod link on the node. One that
	// stays here for several grace periods is a leak an operator should
	// see (the metrics export their count and the oldest's age).
	Unlisted []datastore.Assignment
	// Err says why the pass released nothing: the listing failed, or the
	// adapter is blind.
	Err string
}

// Blind reports whether the pass found the adapter blind to sandboxes
// CNI added.
func (r Result) Blind() bool { return len(r.Missing) > 0 }

// Reconciler runs passes against one store and one adapter.
type Reconciler struct {
	store   *datastore.Store
	adapter runtime.RuntimeAdapter
	cfg     Config

	// passes lets one pass run at a time: the periodic pass and an
	// operator's `ipamctl reconcile` would otherwise interleave, and one
	// pass's loss of the adapter's sight (settleMissing) would undo the
	// sight the other had just earned from its own listing.
	passes sync.Mutex

	mu      sync.Mutex
	last    Result
	hasLast bool
	sight   sight
	names   *vethNames
}

// New returns a Reconciler; zero Config fields take their defaults.
func New(store *datastore.Store, adapter runtime.RuntimeAdapter, cfg Config) *Reconciler {
	if cfg.Interval <= 0 {
		cfg.Interval = reconcileconf.DefaultInterval
	}
	if cfg.Grace <= 0 {
		cfg.Grace = reconcileconf.DefaultGrace
	}
	if cfg.ListTimeout <= 0 {
		cfg.ListTimeout = reconcileconf.DefaultListTimeout
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
	if cfg.LinkGrace <= 0 {
		cfg.LinkGrace = reconcileconf.DefaultLinkGrace
	}
	if cfg.StartedAt.IsZero() {
		cfg.StartedAt = cfg.Now()
	}
	if cfg.VethPrefix == "" {
		cfg.VethPrefix = hostveth.DefaultPrefix
	}
	return &Reconciler{store: store, adapter: adapter, cfg: cfg, names: &vethNames{prefix: cfg.VethPrefix}}
}

// Last returns the most recent pass's result.
func (r *Reconciler) Last() (Result, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.last, r.hasLast
}

// RunOnce makes one pass. In a dry run nothing is adopted or released;
// Result.Released holds what would be. An error means the listing failed
// (nothing was released) or the datastore could not record the pass.
func (r *Reconciler) RunOnce(ctx context.Context, dryRun bool) (Result, error) {
	r.passes.Lock()
	res, err := r.pass(ctx, dryRun)
	r.passes.Unlock()
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
	r.names.sweep()
	sandboxes, err := r.list(ctx)
	if err != nil {
		res.Err = err.Error()
		r.cfg.Logger.Warn("runtime listing failed: releasing nothing this pass", slog.Any("error", err))
		return res, err
	}
	res.Listed = len(sandboxes)
	n := r.readNode(ctx)
	if !dryRun {
		if err := r.observe(ctx, sandboxes, n, started, &res); err != nil {
			res.Err = err.Error()
			return res, err
		}
	}
	assignments := r.store.Assignments()
	view := r.join(assignments, sandboxes, n)
	res.Unlisted = pick(assignments, view, unlisted)
	var settled []datastore.Assignment
	cutoff := started.Add(-r.cfg.Grace)
	if missing := pick(assignments, view, missingBy(cutoff)); len(missing) > 0 {
		var blind error
		if settled, blind = r.settleMissing(ctx, missing, view, n); blind != nil {
			res.Missing = sandboxIDs(missing)
			err := fmt.Errorf("%w; %d sandbox(es) that CNI added more than %s ago are not in its listing: %s",
				blind, len(res.Missing), r.cfg.Grace, summarize(res.Missing, 5))
			res.Err = err.Error()
			r.cfg.Logger.Error("ADAPTER IS BLIND: it does not list sandboxes CNI added; releasing nothing until they are listed or released",
				slog.Any("why", blind), slog.Any("missing", res.Missing))
			return res, err
		}
	}
	// A pod whose link is still on the node is alive, whatever the
	// listing says.
	stale := pick(assignments, view, func(row join.AssignmentRow) bool { return staleBy(cutoff)(row) && !row.LinkFound })
	// Nor is one whose network namespace is still there (netns.go).
	stale = slices.DeleteFunc(stale, r.keptByNetNS)
	stale = append(stale, settled...)
	if dryRun {
		res.Released = stale
		r.logReleases("would release (dry run)", stale)
		return res, nil
	}
	// The datastore logs each release with its reason (runtime_gone).
	released, err := r.store.ReleaseAssignments(ctx, stale)
	res.Released = released
	gone := make(map[datastore.Key]struct{}, len(released))
	for _, a := range released {
		gone[a.Key] = struct{}{}
	}
	res.Unlisted = slices.DeleteFunc(res.Unlisted, func(a datastore.Assignment) bool { _, ok := gone[a.Key]; return ok })
	if err != nil {
		res.Err = err.Error()
		return res, fmt.Errorf("reconcile: %w", err)
	}
	return res, nil
}

// ListSandboxes lists the runtime's sandboxes through the reconciler's
// adapter, within ListTimeout, changing nothing: ipamctl check compares
// the listing with the datastore and the node.
func (r *Reconciler) ListSandboxes(ctx context.Context) ([]runtime.Sandbox, error) {
	return r.list(ctx)
}

// ErrAdapterBlind: the adapter does not list sandboxes CNI added, so its
// listing proves nothing gone.
var ErrAdapterBlind = errors.New("the runtime adapter does not see what CNI sees")

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

// observe hands the listing's evidence to the datastore.
func (r *Reconciler) observe(ctx context.Context, sandboxes []runtime.Sandbox, n node, started time.Time, res *Result) error {
	if r.cfg.Network == "" {
		return errors.New("reconcile: Config.Network is empty")
	}
	view := r.join(r.store.Assignments(), sandboxes, n)
	r.earnSight(view, started)
	ev := r.buildEvidence(sandboxes, view, n, started, r.store.Unproven())
	rep, err := r.store.Observe(ctx, ev)
	res.Adopted, res.Confirmed, res.Conflicts, res.Quarantined = rep.Adopted, rep.Confirmed, rep.Conflicts, rep.Quarantined
	res.Unproven, res.Unaccounted = !rep.Proven, rep.Unaccounted
	if err != nil {
		return fmt.Errorf("reconcile: %w", err)
	}
	if rep.Adopted > 0 || rep.Conflicts > 0 {
		r.cfg.Logger.Warn("the runtime listing changed the datastore",
			slog.Int("adopted", rep.Adopted), slog.Int("conflicts", rep.Conflicts),
			slog.Int("proven_free", rep.ProvenFree), slog.Int("quarantined", rep.Quarantined), slog.Bool("proven", rep.Proven))
	}
	return nil
}

func (r *Reconciler) logReleases(msg string, as []datastore.Assignment) {
	for _, a := range as {
		r.cfg.Logger.Info(msg, slog.String("sandbox_id", a.SandboxID), slog.String("network", a.Network),
			slog.String("ifname", a.IfName), slog.String("pod", a.Pod.Namespace+"/"+a.Pod.Name),
			slog.String("pod_uid", a.Pod.UID), slog.String("ip", a.Address.IP.String()))
	}
}

// summarize joins at most n items, saying how many more there are.
func summarize(items []string, n int) string {
	if len(items) <= n {
		return strings.Join(items, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(items[:n], ", "), len(items)-n)
}
