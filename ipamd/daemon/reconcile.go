package daemon

import (
	"context"
	"log/slog"
	"time"

	"github.com/sandboxipam/sandboxipam/ipamd/datastore"
	"github.com/sandboxipam/sandboxipam/ipamd/introspect"
	"github.com/sandboxipam/sandboxipam/ipamd/introspect/api"
	"github.com/sandboxipam/sandboxipam/ipamd/reconcile"
)

// firstRetry is the wait before retrying a failed pass; it doubles up to
// the interval. A failed pass at start is the common case (the adapter is
// still launching), and an unproven store refuses every ADD until a pass
// succeeds, so waiting a whole interval would be far too long.
const firstRetry = 250 * time.Millisecond

func (d *Daemon) newReconciler() *reconcile.Reconciler {
	return reconcile.New(d.store, d.adapter.runtime, reconcile.Config{
		Interval: d.cfg.Reconcile.Interval, Grace: d.cfg.Reconcile.Grace, ListTimeout: d.cfg.Reconcile.ListTimeout,
		Network: d.cfg.Network, IfName: d.cfg.IfName,
		Logger:   d.log.With("component", "reconcile"),
		OnResult: d.onReconcile,
	})
}

func (d *Daemon) onReconcile(r reconcile.Result) {
	d.metrics.ObserveReconcile(r)
	if r.Adopted > 0 {
		d.log.Warn("ADOPTED assignments from the runtime listing after a lost checkpoint", slog.Int("adopted", r.Adopted))
	}
	if len(r.Released) > 0 && !r.DryRun {
		d.log.Info("reconcile released addresses of sandboxes the runtime no longer has", slog.Int("released", len(r.Released)))
	}
}

// adoptBeforeServing runs the first pass synchronously when the checkpoint
// was not loaded, and reports whether it succeeded. A failure is logged
// loudly; the background loop keeps retrying.
func (d *Daemon) adoptBeforeServing(ctx context.Context) bool {
	if d.store.Recovery().Checkpoint == datastore.RecoveryLoaded {
		return false
	}
	res, err := d.rec.RunOnce(ctx, false)
	if err != nil {
		d.log.Error("COULD NOT ADOPT FROM THE RUNTIME before serving: the checkpoint was not loaded and the runtime could not be listed; retrying in the background",
			slog.Any("error", err))
		return false
	}
	d.log.Warn("adopted the runtime's pods before serving", slog.Int("listed", res.Listed), slog.Int("adopted", res.Adopted),
		slog.Int("released", len(res.Released)))
	return true
}

// reconcileLoop runs a pass now (unless skipFirst: one just ran), then
// every interval; after a failed pass it retries sooner, with backoff.
func (d *Daemon) reconcileLoop(ctx context.Context, skipFirst bool) {
	retry := firstRetry
	for {
		wait := d.cfg.Reconcile.Interval
		if skipFirst {
			skipFirst = false
		} else if _, err := d.rec.RunOnce(ctx, false); err != nil {
			if ctx.Err() != nil {
				return
			}
			d.log.Debug("reconcile pass failed; retrying soon", slog.Any("error", err), slog.Duration("retry_in", retry))
			wait = min(retry, wait)
			retry = min(retry*2, d.cfg.Reconcile.Interval)
		} else {
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
func (d *Daemon) adapterView(context.Context) api.Adapter {
	v := d.adapter.view()
	v.Interval, v.Grace = d.cfg.Reconcile.Interval.String(), d.cfg.Reconcile.Grace.String()
	if d.rec != nil {
		if last, ok := d.rec.Last(); ok {
			view := introspect.ReconcileView(last, time.Now())
			v.Last = &view
		}
	}
	return v
}

// reconcileNow serves POST /v1/reconcile, or nil when there is no adapter.
func (d *Daemon) reconcileNow() func(ctx context.Context, dryRun bool) (reconcile.Result, error) {
	if d.rec == nil {
		return nil
	}
	return d.rec.RunOnce
}
