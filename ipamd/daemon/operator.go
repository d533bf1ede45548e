package daemon

import (
	"context"
	"log/slog"

	"github.com/sandboxipam/sandboxipam/ipamd/config"
	"github.com/sandboxipam/sandboxipam/ipamd/datastore"
	"github.com/sandboxipam/sandboxipam/ipamd/hostlinks"
	"github.com/sandboxipam/sandboxipam/ipamd/introspect"
	"github.com/sandboxipam/sandboxipam/ipamd/nodecheck"
	"github.com/sandboxipam/sandboxipam/runtime"
)

// onStoreEvent feeds the history and the metrics with the datastore's
// assignments and releases. The store emits nothing while it opens, and
// the metrics exist before the socket or the reconciler can change it.
func (d *Daemon) onStoreEvent(events []datastore.Event) {
	d.history.Record(events)
	if d.metrics != nil {
		d.metrics.ObserveEvents(events)
	}
}

// adapterState is ipamd_adapter_state's value.
func (d *Daemon) adapterState() string {
	sup := d.adapter.supervisor()
	if sup == nil {
		return "none"
	}
	return string(sup.Health().State)
}

// sandboxesNow lists the runtime's sandboxes through the reconciler's
// adapter, for ipamctl who and check.
func (d *Daemon) sandboxesNow(ctx context.Context) ([]runtime.Sandbox, error) {
	rec := d.rec.Load()
	if rec == nil {
		return nil, introspect.ErrNoAdapter
	}
	return rec.ListSandboxes(ctx)
}

// checkNow serves ipamctl check. ipamd reads the kernel itself rather
// than leaving it to ipamctl: it runs on the node, in the namespace whose
// pod links it already reads for proof (podLinks.netNS), with the plugin's
// hostVethPrefix from its config, so the check reads exactly what the
// reconciler trusts, and ipamctl works the same from a port-forward. The
// settle time is the reconcile grace: an ADD still being wired, or a
// sandbox still being created, is not judged before it.
func (d *Daemon) checkNow(ctx context.Context) nodecheck.Outcome {
	src := nodecheck.Sources{
		Assignments: d.store.Assignments, Deleted: d.store.DeletedSandboxes, NetNS: hostlinks.NetNSAddrs,
		VethPrefix: d.cfg.PodLinks.HostVethPrefix, Settle: d.cfg.Reconcile.Grace,
	}
	if d.rec.Load() != nil {
		src.Sandboxes = d.sandboxesNow
	}
	if d.cfg.PodLinks.PodWiring != config.PodWiringIPAMOnly {
		src.Node = hostlinks.Reader{Prefix: d.cfg.PodLinks.HostVethPrefix, NetNS: d.cfg.PodLinks.NetNS}.Read
	}
	out := nodecheck.Run(ctx, src)
	d.log.Info("check compared ipamd, the runtime and the kernel", slog.Int("disagreements", len(out.Disagreements)),
		slog.Int("attempts", out.Attempts), slog.Bool("raced", out.Raced))
	return out
}
