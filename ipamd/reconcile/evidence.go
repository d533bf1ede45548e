package reconcile

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/sandboxipam/sandboxipam/ipamd/datastore"
	"github.com/sandboxipam/sandboxipam/ipamd/hostlinks"
	"github.com/sandboxipam/sandboxipam/ipamd/join"
	"github.com/sandboxipam/sandboxipam/runtime"
)

// NodeReader reads the node's pod links (hostlinks.Reader on Linux).
type NodeReader interface {
	Read(ctx context.Context) (hostlinks.Snapshot, error)
}

// NetNSReader reads the addresses inside a pod's network namespace
// (hostlinks.NetNSAddrs on Linux).
type NetNSReader func(path string) ([]netip.Addr, error)

// node is what a pass knows of the node: its pod links, or why it could
// not read them.
type node struct {
	links map[string][]netip.Addr
	err   error
}

func (r *Reconciler) readNode(ctx context.Context) node {
	if r.cfg.Node == nil {
		return node{err: fmt.Errorf("no node reader configured")}
	}
	snap, err := r.cfg.Node.Read(ctx)
	if err != nil {
		return node{err: err}
	}
	return node{links: snap.Links}
}

// join joins the assignments with the listing and the node's pod links:
// the one join.Join that ipamd/nodecheck and the datastore's proof use
// too.
func (r *Reconciler) join(assignments []datastore.Assignment, sandboxes []runtime.Sandbox, n node) join.View {
	return join.Join(join.Input{Assignments: datastore.JoinAssignments(assignments), Sandboxes: sandboxes,
		Links: n.links, VethPrefix: r.cfg.VethPrefix, IfName: r.cfg.IfName, LinkName: r.names.name})
}

// buildEvidence turns a successful listing, and the node, into what the
// datastore needs to account for every pod's address:
//
//  1. the IPs a sandbox reports (a stopped one's too: it may still hold
//     them), and any more that its pod link routes;
//  2. else the host routes through the veth the CNI plugin named after
//     the sandbox, when that veth exists (it may route nothing yet);
//  3. else, while the store is unproven, the addresses inside the
//     sandbox's network namespace, when the adapter names it;
//  4. else a sandbox holds nothing on this node when it was created after
//     ipamd started (any address it holds would be in the store), or a
//     DEL or an operator's release for it came since;
//  5. else, only when the plugin is known to wire every pod itself
//     (PluginWiresEveryPod: a pod wired by another main plugin has no
//     link of ours, so a missing one proves nothing), it holds nothing
//     when it is stopped, or LinkGrace has passed since ipamd started
//     (the plugin wires a pod moments after ipamd answers its ADD, so
//     only an ADD answered just before a restart can still lack its
//     link);
//  6. else it is unaccounted for, and the store stays unproven.
//
// A pod veth on the node that neither a listed sandbox nor an assignment
// owns is held by a pod the adapter does not list: its addresses are
// held, and it is unaccounted for too (the adapter may be looking at the
// wrong runtime).
func (r *Reconciler) buildEvidence(sandboxes []runtime.Sandbox, view join.View, n node, at time.Time, unproven bool) datastore.Evidence {
	ev := datastore.Evidence{Network: r.cfg.Network, IfName: r.cfg.IfName, At: at, Listed: make(map[string]struct{}, len(sandboxes))}
	for _, sb := range sandboxes {
		// A host-network sandbox is listed too: the adapter sees it, so
		// an assignment under its ID is not a sign of blindness.
		ev.Listed[sb.ID] = struct{}{}
	}
	for _, row := range view.Sandboxes {
		sb := row.Sandbox
		ips, source, why := r.sandboxAddrs(row, n, unproven)
		if why != "" {
			ev.Unaccounted = append(ev.Unaccounted, fmt.Sprintf("sandbox %s (pod %s/%s, %s): %s", sb.ID, sb.Namespace, sb.Name, stateName(sb), why))
			continue
		}
		for _, ip := range ips {
			ev.Holdings = append(ev.Holdings, datastore.Holding{IP: ip, SandboxID: sb.ID, Ready: sb.State == runtime.StateReady,
				Pod: datastore.Pod{Name: sb.Name, Namespace: sb.Namespace, UID: sb.UID}, Source: source})
		}
		// Its pod link may route more than the runtime reports: the node
		// sends those to this pod too (ipamctl check counts them alike).
		for _, ip := range row.LinkIPs {
			if !slices.Contains(ips, ip) {
				ev.Holdings = append(ev.Holdings, datastore.Holding{IP: ip, SandboxID: sb.ID, Ready: true,
					Pod: datastore.Pod{Name: sb.Name, Namespace: sb.Namespace, UID: sb.UID}, Source: "host route via " + row.Link})
			}
		}
	}
	for _, l := range view.Links {
		if l.Listed {
			continue // a listed sandbox's: its row above said what it holds
		}
		for _, ip := range l.IPs {
			ev.Holdings = append(ev.Holdings, datastore.Holding{IP: ip, SandboxID: l.Owner, Ready: true, Source: "host route via " + l.Name})
		}
		if !l.Assigned && len(l.IPs) > 0 {
			ev.Unaccounted = append(ev.Unaccounted, fmt.Sprintf("pod link %s on the node routes %s, and no listed sandbox owns it (is the adapter looking at the runtime kubelet uses?)",
				l.Name, joinAddrs(l.IPs)))
		}
	}
	return ev
}

// sandboxAddrs finds a listed sandbox's addresses, or says why nothing
// could.
func (r *Reconciler) sandboxAddrs(row join.SandboxRow, n node, unproven bool) (ips []netip.Addr, source, unaccounted string) {
	sb, veth := row.Sandbox, row.Link
	if len(sb.IPs) > 0 {
		return sb.IPs, "runtime", ""
	}
	if row.LinkFound {
		return row.LinkIPs, "host route via " + veth, ""
	}
	// Entering a namespace costs a netlink socket per sandbox: done only
	// while the store needs the proof.
	var nsErr error
	if sb.NetNS != "" && r.cfg.NetNS != nil && unproven {
		addrs, err := r.cfg.NetNS(sb.NetNS)
		if err == nil {
			return addrs, "network namespace " + sb.NetNS, ""
		}
		nsErr = fmt.Errorf("its network namespace could not be read: %w", err)
	}
	if n.err != nil {
		return nil, "", fmt.Sprintf("the runtime reports no IP and the node's pod links could not be read: %v", n.err)
	}
	switch {
	case sb.CreatedAt.After(r.cfg.StartedAt):
		// Made after this ipamd opened its store: any address it holds came
		// from this store, which records it. It waits for its first ADD.
		return nil, "created after ipamd started, no address yet", ""
	case r.store.ReleasedWhileUnproven(datastore.Key{Network: r.cfg.Network, SandboxID: sb.ID, IfName: r.cfg.IfName}):
		// Its DEL (or an operator's release) came since the state was
		// lost: whatever it held was given back.
		return nil, "released by a DEL or an operator since ipamd started", ""
	case !r.cfg.PluginWiresEveryPod:
		if nsErr == nil {
			nsErr = errors.New("no network namespace is known")
		}
		return nil, "", fmt.Sprintf("the runtime reports no IP, there is no pod link %s on the node, and %v; "+
			"a pod wired by another main plugin has no pod link, so this proves nothing (podLinks.podWiring is not plugin): "+
			"waiting until the runtime reports its IP, or its DEL or `ipamctl release %s` comes", veth, nsErr, sb.ID)
	case sb.State != runtime.StateReady:
		// Stopped, reporting no address, and no link on the node: nothing
		// here uses an address for it (a stopped sandbox is never started
		// again; kubelet makes a new one).
		return nil, "stopped, no address and no pod link on the node", ""
	case r.cfg.Now().Sub(r.cfg.StartedAt) >= r.cfg.LinkGrace:
		// The plugin wires a pod within moments of ipamd's answer; a while
		// after start, a pod without its link holds nothing here.
		return nil, "no pod link on the node " + r.cfg.LinkGrace.String() + " after ipamd started", ""
	}
	return nil, "", fmt.Sprintf("the runtime reports no IP and there is no pod link %s on the node yet: an ADD answered before ipamd restarted may still be wiring it (waiting up to %s after start)",
		veth, r.cfg.LinkGrace)
}

func stateName(sb runtime.Sandbox) string {
	if sb.State == runtime.StateReady {
		return "ready"
	}
	return "not ready"
}

func joinAddrs(ips []netip.Addr) string {
	s := make([]string, len(ips))
	for i, ip := range ips {
		s[i] = ip.String()
	}
	return strings.Join(s, ", ")
}
