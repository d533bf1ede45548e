package daemon

import (
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/sandboxipam/sandboxipam/ipamd/adminsock"
	"github.com/sandboxipam/sandboxipam/ipamd/api/hostveth"
	"github.com/sandboxipam/sandboxipam/ipamd/datastore"
	"github.com/sandboxipam/sandboxipam/ipamd/hostlinks"
	"github.com/sandboxipam/sandboxipam/ipamd/introspect"
	"github.com/sandboxipam/sandboxipam/ipamd/introspect/schema"
	"github.com/sandboxipam/sandboxipam/ipamd/reconcile"
	"github.com/sandboxipam/sandboxipam/runtime"
)

// listing is one successful runtime listing.
type listing struct {
	at        time.Time
	sandboxes []runtime.Sandbox
}

// recordingAdapter keeps the last successful listing of the adapter it
// wraps (the reconciler's passes, check and who all list through it), so
// an operator's release is checked against it when the runtime cannot be
// listed right then.
type recordingAdapter struct {
	runtime.RuntimeAdapter
	record func(listing)
}

func (a recordingAdapter) ListSandboxes(ctx context.Context) ([]runtime.Sandbox, error) {
	at := time.Now()
	sbs, err := a.RuntimeAdapter.ListSandboxes(ctx)
	if err == nil {
		a.record(listing{at: at, sandboxes: sbs})
	}
	return sbs, err
}

// evidence is what shows an attachment still in use: one line each, and
// the addresses it shows held.
type evidence struct {
	lines []string
	hold  []netip.Addr
}

func (e *evidence) add(hold []netip.Addr, format string, args ...any) {
	if line := fmt.Sprintf(format, args...); !slices.Contains(e.lines, line) {
		e.lines = append(e.lines, line)
	}
	for _, ip := range hold {
		if !slices.Contains(e.hold, ip) {
			e.hold = append(e.hold, ip)
		}
	}
}

// releaseNow serves POST /v1/release on the admin socket: an operator's
// word that an attachment is gone, checked against the runtime and the
// node. Without Force, any sign of use refuses it (ErrStillInUse, naming
// the evidence); with Force it is released, logged at WARN with the
// caller's uid, counted, and the addresses the evidence shows held are
// quarantined while it lasts.
func (d *Daemon) releaseNow(ctx context.Context, req schema.ReleaseRequest) (schema.Release, error) {
	key := datastore.Key{Network: req.Network, SandboxID: req.SandboxID, IfName: req.IfName}
	peer, _ := adminsock.FromContext(ctx)
	a, ok := d.store.Lookup(key)
	if !ok {
		return schema.Release{}, d.releaseUnheld(ctx, key, peer, req.Force)
	}
	ev := d.releaseEvidence(ctx, a)
	if len(ev.lines) > 0 && !req.Force {
		d.log.Warn("operator release refused: the attachment may still be in use", slog.Any("key", key),
			slog.Uint64("caller_uid", uint64(peer.UID)), slog.Int64("caller_pid", int64(peer.PID)), slog.Any("evidence", ev.lines))
		return schema.Release{}, fmt.Errorf("%w: sandbox %s interface %s not released: %s; if you are sure, release --force (its addresses are then quarantined while the runtime or the node still shows them)",
			introspect.ErrStillInUse, key.SandboxID, key.IfName, strings.Join(ev.lines, "; "))
	}
	var hold []netip.Addr
	if req.Force {
		hold = ev.hold
	}
	released, found, err := d.store.ReleaseQuarantined(ctx, key, datastore.ReasonOperator, hold)
	if err != nil {
		return schema.Release{}, fmt.Errorf("release sandbox %s: %w", key.SandboxID, err)
	}
	if !found {
		return schema.Release{}, fmt.Errorf("%w: network %q sandbox %q interface %q (released meanwhile)", introspect.ErrNotHeld, key.Network, key.SandboxID, key.IfName)
	}
	out := schema.Release{Released: introspect.PodView(released, time.Now()), Forced: req.Force, Evidence: ev.lines}
	for _, ip := range released.IPs() {
		if slices.Contains(hold, ip) {
			out.Quarantined = append(out.Quarantined, ip.String())
		}
	}
	d.logRelease(key, peer, out)
	return out, nil
}

// releaseUnheld answers a release of a key ipamd holds no address for.
// While the store is unproven, the operator's word still counts: the
// sandbox is taken as holding nothing (it stops keeping the pool
// unproven), as its DEL would be. The word is checked against the runtime
// and the node first, like any release: a sandbox they show alive needs
// --force.
func (d *Daemon) releaseUnheld(ctx context.Context, key datastore.Key, peer adminsock.Peer, force bool) error {
	notHeld := fmt.Errorf("%w: network %q sandbox %q interface %q", introspect.ErrNotHeld, key.Network, key.SandboxID, key.IfName)
	if !d.store.Unproven() {
		return notHeld
	}
	ev := d.releaseEvidence(ctx, datastore.Assignment{Key: key})
	if len(ev.lines) > 0 && !force {
		d.log.Warn("operator release refused: the sandbox may still be in use", slog.Any("key", key),
			slog.Uint64("caller_uid", uint64(peer.UID)), slog.Int64("caller_pid", int64(peer.PID)), slog.Any("evidence", ev.lines))
		return fmt.Errorf("%w: sandbox %s interface %s not taken as holding nothing: %s; if you are sure, release --force",
			introspect.ErrStillInUse, key.SandboxID, key.IfName, strings.Join(ev.lines, "; "))
	}
	if _, _, err := d.store.ReleaseFor(ctx, key, datastore.ReasonOperator); err != nil {
		return fmt.Errorf("release sandbox %s: %w", key.SandboxID, err)
	}
	if force {
		d.metrics.ObserveForcedRelease()
	}
	d.log.Warn("operator's word: an unaccounted sandbox holds nothing", slog.Any("key", key), slog.Bool("forced", force),
		slog.Uint64("caller_uid", uint64(peer.UID)), slog.Int64("caller_pid", int64(peer.PID)), slog.Any("evidence", ev.lines))
	if d.store.ReleasedWhileUnproven(key) {
		return fmt.Errorf("%w; ipamd is unproven, and from now on counts that sandbox as holding nothing, on your word (the next reconcile pass takes it into account)", notHeld)
	}
	return notHeld
}

func (d *Daemon) logRelease(key datastore.Key, peer adminsock.Peer, out schema.Release) {
	attrs := []any{slog.Any("key", key), slog.Any("ips", out.Released.IPs),
		slog.Uint64("caller_uid", uint64(peer.UID)), slog.Int64("caller_pid", int64(peer.PID))}
	if !out.Forced {
		d.log.Info("operator released an attachment", attrs...)
		return
	}
	d.metrics.ObserveForcedRelease()
	d.log.Warn("FORCED RELEASE by an operator, over the evidence", append(attrs,
		slog.Any("evidence", out.Evidence), slog.Any("quarantined", out.Quarantined))...)
}

// releaseEvidence gathers what the runtime and the node show of a's
// sandbox and addresses. A source that cannot be read is evidence too:
// without it nothing shows the attachment unused.
func (d *Daemon) releaseEvidence(ctx context.Context, a datastore.Assignment) evidence {
	var ev evidence
	d.runtimeEvidence(ctx, a, &ev)
	d.nodeEvidence(ctx, a, &ev)
	return ev
}

func (d *Daemon) runtimeEvidence(ctx context.Context, a datastore.Assignment, ev *evidence) {
	l, note, err := d.currentListing(ctx)
	if err != nil {
		ev.add(nil, "no successful runtime listing to check it against (%v)", err)
		return
	}
	ips := a.IPs()
	for _, sb := range l.sandboxes {
		if sb.HostNetwork {
			continue // owns no pod address and protects none
		}
		who := fmt.Sprintf("sandbox %s (pod %s/%s, %s)", sb.ID, sb.Namespace, sb.Name, sandboxState(sb))
		if sb.ID == a.SandboxID {
			ev.add(ips, "the runtime's listing at %s%s shows %s", l.at.UTC().Format(time.RFC3339), note, who)
		}
		for _, ip := range sb.IPs {
			if slices.Contains(ips, ip) {
				ev.add([]netip.Addr{ip}, "the runtime reports %s for %s", ip, who)
			}
		}
	}
}

// currentListing lists the runtime now, or, when that fails, returns the
// last successful listing with a note saying so.
func (d *Daemon) currentListing(ctx context.Context) (listing, string, error) {
	rec := d.rec.Load()
	if rec == nil {
		why := d.adapter.notReconciling()
		if why == "" {
			why = "the runtime adapter is not running yet"
		}
		return listing{}, "", fmt.Errorf("%w: %s", introspect.ErrNoAdapter, why)
	}
	at := time.Now()
	sbs, err := rec.ListSandboxes(ctx)
	if err == nil {
		return listing{at: at, sandboxes: sbs}, "", nil
	}
	last := d.lastListing.Load()
	if last == nil {
		return listing{}, "", fmt.Errorf("listing now failed and none succeeded before: %w", err)
	}
	return *last, fmt.Sprintf(" (the last successful one: listing now failed: %v)", err), nil
}

func (d *Daemon) nodeEvidence(ctx context.Context, a datastore.Assignment, ev *evidence) {
	prefix := d.cfg.PodLinks.HostVethPrefix
	snap, err := hostlinks.Reader{Prefix: prefix, NetNS: d.cfg.PodLinks.NetNS}.Read(ctx)
	if err != nil {
		ev.add(nil, "the node's pod links could not be read (%v)", err)
		return
	}
	ips := a.IPs()
	veth := hostveth.Name(prefix, a.SandboxID, a.IfName)
	if routed, ok := snap.Links[veth]; ok {
		ev.add(ips, "the node still has its pod link %s (routing %v)", veth, routed)
	}
	if on, why := reconcile.NetNSOnNode(hostlinks.NetNSIdentity, a.NetNS); on {
		ev.add(ips, "%s", why)
	}
	links := make([]string, 0, len(snap.Links))
	for name := range snap.Links {
		links = append(links, name)
	}
	slices.Sort(links)
	for _, name := range links {
		for _, ip := range snap.Links[name] {
			if slices.Contains(ips, ip) {
				ev.add([]netip.Addr{ip}, "the node routes %s to pod link %s", ip, name)
			}
		}
	}
}

func sandboxState(sb runtime.Sandbox) string {
	if sb.State == runtime.StateReady {
		return "Ready"
	}
	return "NotReady"
}
