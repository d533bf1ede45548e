package cni

import (
	"errors"
	"fmt"
	"net"
	"net/netip"

	"github.com/containernetworking/cni/pkg/types"
	"github.com/sandboxipam/sandboxipam/ipamd/api/hostveth"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// The link-local gateway every pod routes through, and the fixed MAC of
// every host veth it resolves to (see the package doc).
var (
	gatewayV4  = netip.MustParseAddr("169.254.1.1")
	gatewayV6  = netip.MustParseAddr("fe80::ecee:eeff:feee:eeee")
	hostVethHW = net.HardwareAddr{0xee, 0xee, 0xee, 0xee, 0xee, 0xee}
)

// HostVethName is the host-side veth of one attachment (see
// hostveth.Name): ipamd looks a pod's link up on the node by the same name.
func HostVethName(prefix, sandboxID, ifName string) string {
	return hostveth.Name(prefix, sandboxID, ifName)
}

// podLinks describes the veth pair set up for a pod.
type podLinks struct {
	HostName string
	HostMAC  net.HardwareAddr
	PodMAC   net.HardwareAddr
}

func gatewayFor(a netip.Addr) netip.Addr {
	if a.Is4() {
		return gatewayV4
	}
	return gatewayV6
}

func familyOf(a netip.Addr) int {
	if a.Is4() {
		return netlink.FAMILY_V4
	}
	return netlink.FAMILY_V6
}

// hostPrefix is the address as a host route: /32 or /128.
func hostPrefix(a netip.Addr) *net.IPNet {
	bits := a.BitLen()
	return &net.IPNet{IP: a.AsSlice(), Mask: net.CIDRMask(bits, bits)}
}

func defaultDst(a netip.Addr) *net.IPNet {
	bits := a.BitLen()
	zero := netip.IPv4Unspecified()
	if !a.Is4() {
		zero = netip.IPv6Unspecified()
	}
	return &net.IPNet{IP: zero.AsSlice(), Mask: net.CIDRMask(0, bits)}
}

// handles are netlink sockets in the host's (the plugin's) and the pod's
// network namespaces; no thread of the plugin ever switches namespace.
type handles struct {
	host, pod *netlink.Handle
	podNS     netns.NsHandle
}

func openHandles(netnsPath string) (*handles, error) {
	podNS, err := netns.GetFromPath(netnsPath)
	if err != nil {
		return nil, types.NewError(types.ErrInvalidNetNS, "open the pod's network namespace", err.Error())
	}
	host, err := netlink.NewHandle(unix.NETLINK_ROUTE)
	if err != nil {
		podNS.Close()
		return nil, fmt.Errorf("open netlink in the host namespace: %w", err)
	}
	pod, err := netlink.NewHandleAt(podNS, unix.NETLINK_ROUTE)
	if err != nil {
		host.Close()
		podNS.Close()
		return nil, fmt.Errorf("open netlink in %s: %w", netnsPath, err)
	}
	return &handles{host: host, pod: pod, podNS: podNS}, nil
}

func (h *handles) Close() {
	h.host.Close()
	h.pod.Close()
	h.podNS.Close()
}

// setUpPod creates the veth pair with its pod end already in the pod's
// namespace under its final name, then addresses and routes. On error the
// veth is removed again; the caller releases the addresses.
func setUpPod(h *handles, conf *NetConf, args *Args, addrs []podAddress) (*podLinks, error) {
	hostName := HostVethName(conf.HostVethPrefix, args.SandboxID, args.IfName)
	hostLink, err := createVeth(h, conf, args, hostName)
	if err != nil {
		return nil, err
	}
	links, err := configurePair(h, args, hostLink, addrs)
	if err != nil {
		if delErr := h.host.LinkDel(hostLink); delErr != nil {
			err = errors.Join(err, fmt.Errorf("remove veth %s: %w", hostName, delErr))
		}
		return nil, types.NewError(ErrNetworkSetup, "set up the pod's network", err.Error())
	}
	return links, nil
}

// createVeth adds the pair. A host end left over under the same name
// belongs to the same attachment (the name is its hash) and is replaced.
func createVeth(h *handles, conf *NetConf, args *Args, hostName string) (*netlink.Veth, error) {
	veth := &netlink.Veth{
		LinkAttrs:     netlink.LinkAttrs{Name: hostName, HardwareAddr: hostVethHW, MTU: conf.MTU, Flags: net.FlagUp, TxQLen: -1},
		PeerName:      args.IfName,
		PeerNamespace: netlink.NsFd(int(h.podNS)),
		PeerMTU:       uint32(conf.MTU),
		PeerTxQLen:    -1,
	}
	err := h.host.LinkAdd(veth)
	if errors.Is(err, unix.EEXIST) && removeStale(h.host, hostName) {
		err = h.host.LinkAdd(veth)
	}
	if err != nil {
		return nil, types.NewError(ErrNetworkSetup,
			fmt.Sprintf("create veth %s with peer %s in the pod", hostName, args.IfName), err.Error())
	}
	if veth.Index == 0 {
		link, err := h.host.LinkByName(hostName)
		if err != nil {
			return nil, types.NewError(ErrNetworkSetup, "find the new host veth", err.Error())
		}
		veth.Index = link.Attrs().Index
	}
	return veth, nil
}

// removeStale deletes a host link named name; false when there is none,
// so EEXIST came from the pod side.
func removeStale(host *netlink.Handle, name string) bool {
	link, err := host.LinkByName(name)
	if err != nil {
		return false
	}
	return host.LinkDel(link) == nil
}

func configurePair(h *handles, args *Args, hostLink *netlink.Veth, addrs []podAddress) (*podLinks, error) {
	podLink, err := h.pod.LinkByName(args.IfName)
	if err != nil {
		return nil, fmt.Errorf("find %s in the pod: %w", args.IfName, err)
	}
	if err := h.pod.LinkSetUp(podLink); err != nil {
		return nil, fmt.Errorf("set %s up: %w", args.IfName, err)
	}
	for _, a := range addrs {
		if err := addPodAddress(h.pod, podLink, a.Prefix.Addr()); err != nil {
			return nil, err
		}
	}
	podMAC := podLink.Attrs().HardwareAddr
	for _, a := range addrs {
		if err := addHostRoute(h.host, hostLink.Index, a.Prefix.Addr()); err != nil {
			return nil, err
		}
		if err := addHostNeighbour(h.host, hostLink.Index, a.Prefix.Addr(), podMAC); err != nil {
			return nil, err
		}
	}
	return &podLinks{HostName: hostLink.Name, HostMAC: hostVethHW, PodMAC: podMAC}, nil
}

// addHostNeighbour maps a pod's IPv6 address to the pod's MAC on the host
// veth, permanently. Without it the host's first packet to the pod waits
// for neighbour discovery, which the kernel sends only from the veth's
// link-local address, and that address is tentative for the second or so
// of its own duplicate address detection after the veth comes up: a
// dual-stack pod's IPv6 would work a moment after its IPv4. With it (and
// the pod's address added without DAD, and the pod's permanent entry for
// the gateway) no IPv6 packet between pod and host waits for anything, and
// no sysctl needs changing. IPv4's ARP has no such wait.
func addHostNeighbour(host *netlink.Handle, index int, ip netip.Addr, podMAC net.HardwareAddr) error {
	if ip.Is4() {
		return nil
	}
	neigh := &netlink.Neigh{LinkIndex: index, Family: netlink.FAMILY_V6, State: netlink.NUD_PERMANENT, IP: ip.AsSlice(), HardwareAddr: podMAC}
	if err := host.NeighSet(neigh); err != nil {
		return fmt.Errorf("add neighbour %s to the host veth: %w", ip, err)
	}
	return nil
}

// addPodAddress sets the address as a host route, the gateway's permanent
// neighbour entry and the default route via it.
func addPodAddress(pod *netlink.Handle, link netlink.Link, ip netip.Addr) error {
	addr := &netlink.Addr{IPNet: hostPrefix(ip)}
	if !ip.Is4() {
		addr.Flags = unix.IFA_F_NODAD
	}
	if err := pod.AddrAdd(link, addr); err != nil {
		if !ip.Is4() && (errors.Is(err, unix.EACCES) || errors.Is(err, unix.EPERM)) {
			return fmt.Errorf("add %s to the pod: %w (is IPv6 disabled in the pod's network namespace? net.ipv6.conf.%s.disable_ipv6 must be 0 for a dual-stack or IPv6 pool)", ip, err, link.Attrs().Name)
		}
		return fmt.Errorf("add %s to the pod: %w", ip, err)
	}
	gw := gatewayFor(ip)
	neigh := &netlink.Neigh{
		LinkIndex: link.Attrs().Index, Family: familyOf(ip), State: netlink.NUD_PERMANENT,
		IP: gw.AsSlice(), HardwareAddr: hostVethHW,
	}
	if err := pod.NeighSet(neigh); err != nil {
		return fmt.Errorf("add neighbour %s to the pod: %w", gw, err)
	}
	route := &netlink.Route{
		LinkIndex: link.Attrs().Index, Dst: defaultDst(ip), Gw: gw.AsSlice(), Flags: int(netlink.FLAG_ONLINK),
	}
	if err := pod.RouteReplace(route); err != nil {
		return fmt.Errorf("add default route via %s to the pod: %w", gw, err)
	}
	return nil
}

func addHostRoute(host *netlink.Handle, index int, ip netip.Addr) error {
	route := &netlink.Route{LinkIndex: index, Dst: hostPrefix(ip), Scope: netlink.SCOPE_LINK}
	if err := host.RouteReplace(route); err != nil {
		return fmt.Errorf("add host route to %s: %w", ip, err)
	}
	return nil
}

// tearDownPod removes the attachment's veth pair (the pod end and the host
// route go with it). A veth already gone is success.
func tearDownPod(conf *NetConf, args *Args) error {
	host, err := netlink.NewHandle(unix.NETLINK_ROUTE)
	if err != nil {
		return fmt.Errorf("open netlink in the host namespace: %w", err)
	}
	defer host.Close()
	name := HostVethName(conf.HostVethPrefix, args.SandboxID, args.IfName)
	link, err := host.LinkByName(name)
	if err != nil {
		var notFound netlink.LinkNotFoundError
		if errors.As(err, &notFound) {
			return nil
		}
		return fmt.Errorf("find host veth %s: %w", name, err)
	}
	if err := host.LinkDel(link); err != nil && !errors.Is(err, unix.ENODEV) && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("remove host veth %s: %w", name, err)
	}
	return nil
}
