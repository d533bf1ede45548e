// Package hostlinks reads what the node itself shows about pod addresses:
// the host-side veths the CNI plugin made (named by package hostveth) and
// the host routes to pod addresses through them, and the addresses inside
// a pod's network namespace.
//
// ipamd uses it as evidence when the runtime does not report a sandbox's
// IPs (Docker Engine records none, a CRI runtime may omit them for a
// stopped sandbox) and its checkpoint is lost: a pod the plugin wired has
// a veth named after its sandbox ID and a /32 (or /128) route to its
// address through that veth, so the node proves which addresses are held
// without the runtime's help. It reads through netlink (vishvananda/
// netlink), never by running ip(8).
//
// See docs/architecture.md for where this package sits and the life of an
// ADD, a DEL, a reconcile pass and a restart through the daemon.
package hostlinks

import (
	"context"
	"fmt"
	"net/netip"
	"strings"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
)

// Snapshot is the node's pod links at one moment.
type Snapshot struct {
	// Links maps the name of each host-side veth whose name starts with
	// the plugin's prefix to the pod addresses routed through it (none
	// while the plugin is still wiring the pod).
	Links map[string][]netip.Addr
}

// Reader reads the node's pod links.
type Reader struct {
	// Prefix starts the name of every host-side veth the CNI plugin
	// makes (the network config's hostVethPrefix).
	Prefix string
	// NetNS is the network namespace to read, by path; empty means the
	// one ipamd runs in (the host's). Tests read one they made.
	NetNS string
}

// Read lists the host's veths named with the prefix and the host routes
// (one address each) through them.
func (r Reader) Read(ctx context.Context) (Snapshot, error) {
	if err := ctx.Err(); err != nil {
		return Snapshot{}, err
	}
	h, err := r.handle()
	if err != nil {
		return Snapshot{}, fmt.Errorf("read pod links: %w", err)
	}
	defer h.Close()
	links, err := h.LinkList()
	if err != nil {
		return Snapshot{}, fmt.Errorf("read pod links: list links: %w", err)
	}
	snap := Snapshot{Links: map[string][]netip.Addr{}}
	names := map[int]string{}
	for _, l := range links {
		attrs := l.Attrs()
		if r.Prefix != "" && strings.HasPrefix(attrs.Name, r.Prefix) && l.Type() == "veth" {
			snap.Links[attrs.Name] = nil
			names[attrs.Index] = attrs.Name
		}
	}
	routes, err := h.RouteList(nil, netlink.FAMILY_ALL)
	if err != nil {
		return Snapshot{}, fmt.Errorf("read pod links: list routes: %w", err)
	}
	for _, rt := range routes {
		name, ok := names[rt.LinkIndex]
		if !ok || rt.Dst == nil {
			continue
		}
		ones, bits := rt.Dst.Mask.Size()
		ip, ok := netip.AddrFromSlice(rt.Dst.IP)
		if !ok || ones != bits {
			continue
		}
		snap.Links[name] = append(snap.Links[name], ip.Unmap())
	}
	return snap, nil
}

func (r Reader) handle() (*netlink.Handle, error) {
	if r.NetNS == "" {
		return netlink.NewHandle()
	}
	ns, err := netns.GetFromPath(r.NetNS)
	if err != nil {
		return nil, fmt.Errorf("open network namespace %s: %w", r.NetNS, err)
	}
	defer ns.Close()
	return netlink.NewHandleAt(ns)
}

// NetNSAddrs returns the global unicast addresses inside the network
// namespace at path (a pod's), loopback excluded. It reads through a
// netlink socket opened in that namespace; no thread changes namespace.
func NetNSAddrs(path string) ([]netip.Addr, error) {
	ns, err := netns.GetFromPath(path)
	if err != nil {
		return nil, fmt.Errorf("open network namespace %s: %w", path, err)
	}
	defer ns.Close()
	h, err := netlink.NewHandleAt(ns)
	if err != nil {
		return nil, fmt.Errorf("netlink in network namespace %s: %w", path, err)
	}
	defer h.Close()
	addrs, err := h.AddrList(nil, netlink.FAMILY_ALL)
	if err != nil {
		return nil, fmt.Errorf("list addresses in network namespace %s: %w", path, err)
	}
	var out []netip.Addr
	for _, a := range addrs {
		ip, ok := netip.AddrFromSlice(a.IP)
		if !ok {
			continue
		}
		if ip = ip.Unmap(); ip.IsGlobalUnicast() && !ip.IsLoopback() {
			out = append(out, ip)
		}
	}
	return out, nil
}
