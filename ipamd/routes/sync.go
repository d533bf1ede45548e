package routes

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"slices"
	"strings"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/sandboxipam/sandboxipam/cluster/api/v1alpha1"
	"github.com/sandboxipam/sandboxipam/ipamd/introspect/schema"
	"github.com/sandboxipam/sandboxipam/ipamd/ipsource/podcidr"
)

// Status is what the last sync did: ipamctl routes shows it.
type Status = schema.Routes

// Route is one route to another node's range.
type Route = schema.NodeRoute

// Skipped is a node's range without a route.
type Skipped = schema.SkippedRoute

func cloneStatus(s Status) Status {
	s.Routes, s.Skipped = slices.Clone(s.Routes), slices.Clone(s.Skipped)
	return s
}

func everything() labels.Selector { return labels.Everything() }

// want is one route a Node asks for.
type want struct {
	node string
	dst  netip.Prefix
	via  netip.Addr
	link int
}

// Sync makes ipamd's routes in the main table those nodes and blocks ask
// for, and reports what it did and skipped. blocks are the cluster pool's
// IPBlocks (nil unless Config.Blocks).
func (k *Keeper) Sync(nodes []*corev1.Node, blocks []v1alpha1.IPBlock) Status {
	st := Status{Node: k.cfg.NodeName, Protocol: int(Protocol), Routes: []Route{}, Skipped: []Skipped{}}
	wants := k.wants(nodes, blocks, &st)
	have, err := k.nl.RouteListFiltered(netlink.FAMILY_ALL, &netlink.Route{Table: unix.RT_TABLE_MAIN, Protocol: Protocol},
		netlink.RT_FILTER_TABLE|netlink.RT_FILTER_PROTOCOL)
	if err != nil {
		st.Error = fmt.Sprintf("list routes of protocol %d: %v", Protocol, err)
		k.log.Error("could not list ipamd's routes", slog.Any("error", err))
		return st
	}
	errs := k.deleteUnwanted(have, wants)
	for _, p := range sortedKeys(wants) {
		w := wants[p]
		if reason := k.foreign(w.dst); reason != "" {
			st.Skipped = append(st.Skipped, Skipped{Node: w.node, Dst: p.String(), Reason: reason})
			k.log.Error("not routing a node's range: "+reason, slog.String("node", w.node), slog.String("dst", p.String()))
			continue
		}
		if err := k.nl.RouteReplace(w.route()); err != nil {
			errs = append(errs, fmt.Errorf("route %s via %s (node %s): %w", p, w.via, w.node, err))
			continue
		}
		st.Routes = append(st.Routes, Route{Node: w.node, Dst: p.String(), Via: w.via.String(), Dev: k.linkName(w.link)})
	}
	if err := errors.Join(errs...); err != nil {
		st.Error = err.Error()
		k.log.Error("routes to other nodes not all in place", slog.Any("error", err))
	}
	return st
}

// wants is every route this node should have: each other node's podCIDRs
// and, in pool mode, its IPBlocks; a podCIDR wins over a block with the
// same destination. What cannot be routed is added to st.Skipped.
func (k *Keeper) wants(nodes []*corev1.Node, blocks []v1alpha1.IPBlock, st *Status) map[netip.Prefix]want {
	wants := map[netip.Prefix]want{}
	slices.SortFunc(nodes, func(a, b *corev1.Node) int { return strings.Compare(a.Name, b.Name) })
	for _, n := range nodes {
		if n.Name == k.cfg.NodeName {
			continue
		}
		ws, skipped := k.wantsOf(n)
		st.Skipped = append(st.Skipped, skipped...)
		for _, w := range ws {
			wants[w.dst] = w
		}
	}
	ws, skipped := k.blockWants(nodes, blocks)
	st.Skipped = append(st.Skipped, skipped...)
	for _, w := range ws {
		if _, ok := wants[w.dst]; !ok {
			wants[w.dst] = w
		}
	}
	return wants
}

// deleteUnwanted deletes ipamd's routes (have) to destinations no node
// has any more; those still wanted are replaced by Sync when they differ.
func (k *Keeper) deleteUnwanted(have []netlink.Route, wants map[netip.Prefix]want) []error {
	var errs []error
	for _, r := range have {
		if r.Dst == nil {
			continue
		}
		dst, _ := netip.AddrFromSlice(r.Dst.IP)
		ones, _ := r.Dst.Mask.Size()
		p := netip.PrefixFrom(dst.Unmap(), ones)
		if _, ok := wants[p]; ok {
			continue
		}
		if err := k.nl.RouteDel(&r); err != nil && !errors.Is(err, unix.ESRCH) {
			errs = append(errs, fmt.Errorf("delete route to %s: %w", p, err))
			continue
		}
		k.log.Info("route to a range no node has any more deleted", slog.String("dst", p.String()))
	}
	return errs
}

// wantsOf is the routes node n asks for, and the ranges it cannot have
// one for.
func (k *Keeper) wantsOf(n *corev1.Node) ([]want, []Skipped) {
	cidrs, err := podcidr.PodCIDRs(n)
	if err != nil {
		return nil, []Skipped{{Node: n.Name, Reason: err.Error()}}
	}
	var ws []want
	var skipped []Skipped
	for _, p := range cidrs {
		ws, skipped = k.appendWant(ws, skipped, n, "podCIDR", p)
	}
	return ws, skipped
}

// appendWant appends the route to n's range p (what: "podCIDR" or
// "IPBlock") via n's next hop to ws, or why there is none to skipped,
// logged.
func (k *Keeper) appendWant(ws []want, skipped []Skipped, n *corev1.Node, what string, p netip.Prefix) ([]want, []Skipped) {
	via, link, reason := k.nextHop(n, what, p)
	if reason != "" {
		k.log.Error("no route to a node's "+what, slog.String("node", n.Name), slog.String("dst", p.String()), slog.String("reason", reason))
		return ws, append(skipped, Skipped{Node: n.Name, Dst: p.String(), Reason: reason})
	}
	return append(ws, want{node: n.Name, dst: p, via: via, link: link}), skipped
}

// nextHop is the node's InternalIP of p's family when it is on a directly
// connected subnet, with the link to it; else why not. what names p in
// that reason ("podCIDR", "IPBlock").
func (k *Keeper) nextHop(n *corev1.Node, what string, p netip.Prefix) (netip.Addr, int, string) {
	var ip netip.Addr
	for _, text := range nodeInternalIPs(n) {
		if a, err := netip.ParseAddr(text); err == nil && a.Unmap().Is4() == p.Addr().Is4() {
			ip = a.Unmap()
			break
		}
	}
	family := "IPv6"
	if p.Addr().Is4() {
		family = "IPv4"
	}
	if !ip.IsValid() {
		return ip, 0, fmt.Sprintf("Node %s has no %s InternalIP for its %s %s", n.Name, family, what, p)
	}
	rs, err := k.nl.RouteGet(net.IP(ip.AsSlice()))
	switch {
	case err != nil || len(rs) == 0:
		return ip, 0, fmt.Sprintf("Node %s's InternalIP %s is not reachable from this node (%v)", n.Name, ip, err)
	case rs[0].Gw != nil:
		return ip, 0, fmt.Sprintf("Node %s's InternalIP %s is not on a directly connected subnet (the route to it goes via %s)", n.Name, ip, rs[0].Gw)
	case rs[0].Type == unix.RTN_LOCAL:
		return ip, 0, fmt.Sprintf("Node %s's InternalIP %s is an address of this node", n.Name, ip)
	}
	return ip, rs[0].LinkIndex, ""
}

// foreign reports a route to dst in the main table that is not ipamd's.
func (k *Keeper) foreign(dst netip.Prefix) string {
	_, ipn, _ := net.ParseCIDR(dst.String())
	rs, err := k.nl.RouteListFiltered(netlink.FAMILY_ALL, &netlink.Route{Table: unix.RT_TABLE_MAIN, Dst: ipn},
		netlink.RT_FILTER_TABLE|netlink.RT_FILTER_DST)
	if err != nil {
		return ""
	}
	for _, r := range rs {
		if r.Protocol != Protocol {
			return fmt.Sprintf("a route to %s of protocol %d (not ipamd's %d) is in the main table; it is left alone", dst, r.Protocol, Protocol)
		}
	}
	return ""
}

func (w want) route() *netlink.Route {
	_, ipn, _ := net.ParseCIDR(w.dst.String())
	return &netlink.Route{Dst: ipn, Gw: net.IP(w.via.AsSlice()), LinkIndex: w.link,
		Table: unix.RT_TABLE_MAIN, Protocol: Protocol, Scope: netlink.SCOPE_UNIVERSE}
}

func (k *Keeper) linkName(index int) string {
	l, err := k.nl.LinkByIndex(index)
	if err != nil {
		return fmt.Sprint(index)
	}
	return l.Attrs().Name
}

func sortedKeys(m map[netip.Prefix]want) []netip.Prefix {
	out := make([]netip.Prefix, 0, len(m))
	for p := range m {
		out = append(out, p)
	}
	slices.SortFunc(out, func(a, b netip.Prefix) int {
		if c := a.Addr().Compare(b.Addr()); c != 0 {
			return c
		}
		return a.Bits() - b.Bits()
	})
	return out
}
