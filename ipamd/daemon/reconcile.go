package daemon

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/sandboxipam/sandboxipam/ipamd/hostlinks"
	"github.com/sandboxipam/sandboxipam/ipamd/introspect"
	"github.com/sandboxipam/sandboxipam/ipamd/introspect/schema"
	"github.com/sandboxipam/sandboxipam/ipamd/reconcile"
	"github.com/sandboxipam/sandboxipam/runtime"
)

// firstRetry is the wait before retrying a failed pass; it doubles up to
// the interval. A failed pass at start is the common case (the adapter is
// still launching), and an unproven store refuses every ADD until a pass
// succeeds, so waiting a whole interval would be far too long.
const firstRetry = 250 * time.Millisecond

func (d *Daemon) newReconciler(adapter runtime.RuntimeAdapter) *reconcile.Reconciler {
	adapter = recordingAdapter{RuntimeAdapter: adapter, record: func(l listing) { d.lastListing.Store(&l) }}
	return reconcile.New(d.store, adapter, reconcile.Config{
		Interval: d.cfg.Reconcile.Interval, Grace: d.cfg.Reconcile.Grace, ListTimeout: d.cfg.Advanced.Reconcile.ListTimeout,
		Network: d.cfg.Network, IfName: d.cfg.IfName,
		Logger:     d.log.With("component", "reconcile"),
		OnResult:   d.onReconcile,
		Node:       hostlinks.Reader{Prefix: d.cfg.PodLinks.HostVethPrefix, NetNS: d.cfg.PodLinks.NetNS},
		NetNS:      hostlinks.NetNSAddrs,
		VethPrefix: d.cfg.PodLinks.HostVethPrefix,
		StartedAt:  d.startedAt,
		LinkGrace:  d.cfg.Advanced.Reconcile.LinkGrace,

		PluginWiresEveryPod: d.cfg.PluginWiresEveryPod(),
		// The namespace an ADD named, still on the node, keeps its address.
		NetNSIdentity: hostlinks.NetNSIdentity,
	})
}

func (d *Daemon) onReconcile(r reconcile.Result) {
	d.metrics.ObserveReconcile(r)
	if r.Adopted > 0 {
		d.log.Warn("ADOPTED assignments from the runtime listing", slog.Int("adopted", r.Adopted))
	}
	if len(r.Released) > 0 && !r.DryRun {
		d.log.Info("reconcile released addresses of sandboxes the runtime no longer has", slog.Int("released", len(r.Released)))
	}
	d.announce()
}

// reconcileLoop runs a pass now, then every interval; after a failed pass
// it retries sooner, with backoff.
func (d *Daemon) reconcileLoop(ctx context.Context) {
	rec := d.rec.Load()
	retry := firstRetry
	for {
		wait := d.cfg.Reconcile.Interval
		res, err := rec.RunOnce(ctx, false)
		switch {
		case err != nil || res.Unproven:
			// A failed pass, and an unproven store (every ADD refused until
			// proof arrives), are retried soon rather than an interval later.
			if ctx.Err() != nil {
				return
			}
			d.log.Debug("reconcile pass failed or left the store unproven; retrying soon", slog.Any("error", err), slog.Duration("retry_in", retry))
			wait = min(retry, wait)
			retry = min(retry*2, d.cfg.Reconcile.Interval)
		default:
			retry = firstRetry
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
	}
}

// adapterView is /v1/adapter: the adapter's health and the last pass.
func (d *Daemon) adapterView(context.Context) schema.Adapter {
	v := d.adapter.view()
	v.Interval, v.Grace = d.cfg.Reconcile.Interval.String(), d.cfg.Reconcile.Grace.String()
	if rec := d.rec.Load(); rec != nil {
		if sees, proof := rec.Sees(); sees {
			v.SeesCNI = proof
		}
		if last, ok := rec.Last(); ok {
			view := introspect.ReconcileView(last, time.Now())
			v.Last = &view
		}
	}
	return v
}

// reconcileNow serves POST /v1/reconcile; it fails while there is no
// reconciler (no adapter selected yet, or none usable).
func (d *Daemon) reconcileNow(ctx context.Context, dryRun bool) (reconcile.Result, error) {
	rec := d.rec.Load()
	if rec == nil {
		why := d.adapter.notReconciling()
		if why == "" {
			why = "the runtime adapter is not selected yet"
		}
		return reconcile.Result{}, fmt.Errorf("%w: %s", introspect.ErrNoAdapter, why)
	}
	return rec.RunOnce(ctx, dryRun)
}
