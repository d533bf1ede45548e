// Package daemon wires ipamd together: datastore, IP source, runtime
// adapter under supervision, reconciler, the CNI-facing socket, and the
// introspection and metrics listeners. cmd/ipamd is a thin main around
// Run; tests start a Daemon in-process, or the real binary for crash tests.
//
// Start order matters for safety, not just tidiness:
//
//  1. The datastore opens its checkpoint. Without a trusted one (missing
//     or corrupt) the store is unproven: it hands out no address until a
//     successful runtime listing, and the node's own pod links, account
//     for every pod's address (see package reconcile). A missing one is
//     treated so too: a first start and a lost state directory look the
//     same, and only the runtime can tell them apart.
//  2. The IP source fills the pool. The podCIDR source fills it from the
//     checkpoint's record of the Node when there is one, and otherwise
//     leaves it empty and waiting: its informer runs in the background,
//     and the pool follows the Node's spec.podCIDRs once they are known.
//     With routes.nodes, the route keeper starts beside it.
//  3. The CNI socket and the HTTP listeners open. ADD and DEL never wait
//     on the adapter: with a trusted checkpoint they are served within
//     milliseconds of start whatever the adapter does; an unproven store
//     answers ADD with CNI code 11 (try again later) naming what it waits
//     for.
//  4. In the background, the adapter is selected and launched under
//     supervision (a failed launch is retried), and the reconciler runs: a
//     failed pass (a dead adapter, a blind one) is retried soon, a good
//     one every interval.
//  5. Once the store is trusted or proven, the pool has a range and the
//     socket accepts, the CNI conflist is written where cni.confListPath
//     says (when set), and /readyz answers 200.
//
// Stop reverses it: the conflist ipamd wrote is withdrawn (and not written
// again), listeners close, calls in flight finish, the reconciler
// stops, the plugin process is killed, the checkpoint is flushed.
//
// See docs/architecture.md for where this package sits and the life of an
// ADD, a DEL, a reconcile pass and a restart through it.
package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vishvananda/netlink"
	"k8s.io/utils/clock"

	"github.com/sandboxipam/sandboxipam/ipamd/config"
	"github.com/sandboxipam/sandboxipam/ipamd/datastore"
	"github.com/sandboxipam/sandboxipam/ipamd/history"
	"github.com/sandboxipam/sandboxipam/ipamd/hostlinks"
	"github.com/sandboxipam/sandboxipam/ipamd/kubeclient"
	"github.com/sandboxipam/sandboxipam/ipamd/metrics"
	"github.com/sandboxipam/sandboxipam/ipamd/reconcile"
	"github.com/sandboxipam/sandboxipam/ipamd/routes"
	"github.com/sandboxipam/sandboxipam/ipamd/server"
)

// stopTimeout bounds how long Run lets calls in flight finish at shutdown.
const stopTimeout = 10 * time.Second

// Options are the daemon's non-config inputs.
type Options struct {
	// Logger; nil discards.
	Logger *slog.Logger
	// Executable is ipamd's own path, which locates the default adapter
	// directory; empty means os.Executable.
	Executable string
	// Probe tests runtime sockets for runtime.adapter auto; nil means
	// DialProbe.
	Probe Prober
	// Kube is the Kubernetes client of the podCIDR source and the routes;
	// nil builds one from ipSource.podCIDR.kubeconfig (tests pass their API
	// server's).
	Kube *kubeclient.Client
	// RoutesNetlink is the network namespace routes.nodes keeps routes
	// in; nil means ipamd's own (the host's).
	RoutesNetlink *netlink.Handle
	// PoolNow is the pool source's clock of its return grace; nil means
	// time.Now (tests pass a clock they move).
	PoolNow func() time.Time
	// PoolLeaseClock is the monotonic clock of the pool source's Lease
	// renews and fence; nil means the real one (tests step a fake one).
	PoolLeaseClock clock.WithTicker
}

// Daemon is one running ipamd.
type Daemon struct {
	cfg  config.Config
	opts Options
	log  *slog.Logger

	store   *datastore.Store
	source  *sourceHandle
	adapter *adapterHandle
	// rec is set once the adapter is selected; nil without one.
	rec atomic.Pointer[reconcile.Reconciler]
	// lastListing is the adapter's last successful listing, which an
	// operator's release is checked against when the runtime cannot be
	// listed right then.
	lastListing atomic.Pointer[listing]
	announced   announcement
	// readinessSeen is the last readiness answer, so a change is logged
	// once, with its reasons, whoever asked.
	readinessSeen readinessLog
	// startedAt is when the store opened: a sandbox created later cannot
	// hold an address from before.
	startedAt time.Time
	metrics   *metrics.Metrics
	// history keeps the recent assignment events for ipamctl who.
	history *history.History
	// endpoint is the CNI socket's, set once it serves: STATUS, answered
	// on it, reads it through readiness while serveSocket sets it.
	endpoint atomic.Pointer[server.Endpoint]
	http     *httpServers

	// kubeClient is shared by the podCIDR source and the routes.
	kubeOnce   sync.Once
	kubeClient *kubeclient.Client
	kubeErr    error
	// routes keeps the routes to other nodes; nil unless routes.nodes.
	routes *routes.Keeper
	// changed is signalled when the podCIDR source changed the pool's ranges.
	changed chan struct{}

	cancel context.CancelFunc
	wg     sync.WaitGroup
	stop   sync.Once
}

// New prepares a daemon; Start runs it.
func New(cfg config.Config, opts Options) *Daemon {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Probe == nil {
		opts.Probe = DialProbe
	}
	if opts.Executable == "" {
		if exe, err := os.Executable(); err == nil {
			opts.Executable = exe
		}
	}
	return &Daemon{cfg: cfg, opts: opts, log: opts.Logger, changed: make(chan struct{}, 1)}
}

// Run starts a daemon, serves until ctx is done, and stops it.
func Run(ctx context.Context, cfg config.Config, opts Options) error {
	d := New(cfg, opts)
	if err := d.Start(ctx); err != nil {
		return err
	}
	<-ctx.Done()
	d.log.Info("shutting down", slog.Any("cause", context.Cause(ctx)))
	stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), stopTimeout)
	defer cancel()
	return d.Stop(stopCtx)
}

// Start brings the daemon up in the order the package doc gives. ctx
// bounds start-up only; Stop ends the daemon. On error, everything
// already started is stopped again.
func (d *Daemon) Start(ctx context.Context) (err error) {
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	d.cancel = cancel
	defer func() {
		if err != nil {
			_ = d.Stop(context.WithoutCancel(ctx))
		}
	}()
	d.startedAt = time.Now()
	if err := d.checkDirs(); err != nil {
		return err
	}
	if err := d.openStore(ctx); err != nil {
		return err
	}
	if d.source, err = startSource(ctx, runCtx, d); err != nil {
		return err
	}
	if err := d.startRoutes(runCtx); err != nil {
		return err
	}
	d.adapter = newAdapterHandle(d.cfg, d.opts, d.log)
	d.metrics = metrics.New(metrics.Sources{Pool: d.store.View, AdapterRestarts: d.adapter.restarts,
		AdapterState: d.adapterState, ReconcileGrace: d.cfg.Reconcile.Grace})
	if d.routes != nil {
		d.metrics.MustRegister(d.routes.Collectors()...)
	}
	if d.kubeClient != nil {
		d.metrics.MustRegister(d.kubeClient.Collector())
	}
	if src := d.PoolSource(); src != nil {
		d.metrics.MustRegister(src.Collectors()...)
	}
	d.metrics.MustRegister(d.source.collectors...)
	if err := d.serveSocket(ctx); err != nil {
		return err
	}
	if d.http, err = d.serveHTTP(ctx); err != nil {
		return err
	}
	d.log.Info("ipamd serving", slog.String("socket", d.cfg.Socket),
		slog.String("introspection", d.http.introspectAddr.String()), slog.String("network", d.cfg.Network))
	d.announce()
	d.wg.Go(func() { d.announceOnChange(runCtx) })
	d.wg.Go(func() { d.runAdapter(runCtx) })
	return nil
}

// runAdapter selects and launches the adapter, then reconciles until ctx
// is done. It runs in the background: the CNI path never waits on it.
func (d *Daemon) runAdapter(ctx context.Context) {
	adapter := d.adapter.start(ctx, d.store.NoteWaiting)
	if adapter == nil {
		if why := d.adapter.notReconciling(); why != "" {
			d.store.NoteWaiting(why)
		}
		return
	}
	d.rec.Store(d.newReconciler(adapter))
	d.reconcileLoop(ctx)
}

func (d *Daemon) openStore(ctx context.Context) error {
	d.history = history.New(history.DefaultCapacity)
	store, err := datastore.Open(ctx, datastore.Options{
		Path: d.cfg.CheckpointPath(), Cooldown: storeCooldown(d.cfg.Cooldown), Logger: d.log.With("component", "datastore"),
		ProveWhenMissing: true, OnEvent: d.onStoreEvent,
	})
	if err != nil {
		return fmt.Errorf("open datastore %s: %w", d.cfg.CheckpointPath(), err)
	}
	d.store = store
	rec := store.Recovery()
	switch rec.Checkpoint {
	case datastore.RecoveryLoaded:
		d.log.Info("checkpoint loaded", slog.String("path", d.cfg.CheckpointPath()), slog.Int("assignments", rec.Assignments),
			slog.Bool("unproven", store.Unproven()))
	case datastore.RecoveryMissing:
		d.log.Warn("NO CHECKPOINT: a first start or a lost state directory; no address is handed out until a runtime listing shows no pod, or it and the node account for every pod's address",
			slog.String("path", d.cfg.CheckpointPath()))
	default:
		d.log.Error("CHECKPOINT CORRUPT: it was set aside and no address is handed out until the runtime listing and the node account for every pod's address",
			slog.String("path", d.cfg.CheckpointPath()), slog.String("detail", rec.Detail), slog.Int("quarantined", rec.Quarantined))
	}
	return nil
}

// storeCooldown is config's cooldown as the datastore takes it: the
// operator's 0s means no cooldown, which the datastore spells NoCooldown
// (its zero is "unset").
func storeCooldown(d time.Duration) time.Duration {
	if d == 0 {
		return datastore.NoCooldown
	}
	return d
}

func (d *Daemon) serveSocket(ctx context.Context) error {
	l, err := server.Listen(ctx, d.cfg.Socket)
	if err != nil {
		return err
	}
	opts := server.Options{Logger: d.log.With("component", "server"), Observe: d.metrics.ObserveCall, OnWiringRefused: d.metrics.ObserveWiringRefused,
		NetNSIdentity: hostlinks.NetNSIdentity, Readiness: d.readiness}
	if d.cfg.PluginWiresEveryPod() {
		opts.RefuseIPAMOnly = d.cfg.PodWiringReason()
	}
	srv := server.New(d.store, opts)
	d.endpoint.Store(server.Serve(l, srv.WireHandler(), d.log.With("component", "socket")))
	return nil
}

// IntrospectionAddr is where the introspection API listens (useful when
// the config asked for port 0).
func (d *Daemon) IntrospectionAddr() net.Addr { return d.http.introspectAddr }

// MetricsAddr is where /metrics listens; it equals IntrospectionAddr when
// metrics.address is empty.
func (d *Daemon) MetricsAddr() net.Addr { return d.http.metricsAddr }

// Store is the daemon's datastore.
func (d *Daemon) Store() *datastore.Store { return d.store }

// Stop shuts the daemon down; it is safe to call more than once.
func (d *Daemon) Stop(ctx context.Context) error {
	var errs []error
	d.stop.Do(func() {
		// First, so the runtime stops sending ADDs before the socket
		// closes.
		d.withdraw()
		if d.http != nil {
			errs = append(errs, d.http.shutdown(ctx))
		}
		if e := d.endpoint.Load(); e != nil {
			errs = append(errs, e.Stop(ctx))
		}
		if d.cancel != nil {
			d.cancel()
		}
		d.wg.Wait()
		if d.adapter != nil {
			d.adapter.close()
		}
		if d.store != nil {
			errs = append(errs, d.store.Close())
		}
		d.log.Info("ipamd stopped")
	})
	return errors.Join(errs...)
}
