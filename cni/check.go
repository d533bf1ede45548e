package cni

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"

	"github.com/containernetworking/cni/pkg/types"
	"github.com/vishvananda/netlink"
)

// checkHeld compares what ipamd holds with what prevResult says.
func checkHeld(args *Args, want []netip.Addr, held []podAddress) error {
	heldIPs := make([]netip.Addr, 0, len(held))
	for _, h := range held {
		heldIPs = append(heldIPs, h.Prefix.Addr())
	}
	for _, w := range want {
		if !slices.Contains(heldIPs, w) {
			return types.NewError(ErrAddressNotHeld,
				fmt.Sprintf("ipamd does not hold %s for sandbox %s interface %s", w, args.SandboxID, args.IfName),
				fmt.Sprintf("ipamd holds %v", heldIPs))
		}
	}
	return nil
}

// checkPod verifies the veth pair, addresses and routes that ADD set up.
func checkPod(conf *NetConf, args *Args, want []netip.Addr) error {
	h, err := openHandles(args.Netns)
	if err != nil {
		return err
	}
	defer h.Close()
	var problems []error
	podLink, err := h.pod.LinkByName(args.IfName)
	if err != nil {
		problems = append(problems, fmt.Errorf("interface %s is missing in the pod: %w", args.IfName, err))
	} else {
		problems = append(problems, checkPodLink(h.pod, podLink, want)...)
	}
	hostName := HostVethName(conf.HostVethPrefix, args.SandboxID, args.IfName)
	hostLink, err := h.host.LinkByName(hostName)
	if err != nil {
		problems = append(problems, fmt.Errorf("host veth %s is missing: %w", hostName, err))
	} else {
		problems = append(problems, checkHostRoutes(h.host, hostLink, want)...)
	}
	if len(problems) > 0 {
		return types.NewError(ErrCheckFailed, "the pod's network differs from prevResult", errors.Join(problems...).Error())
	}
	return nil
}

func checkPodLink(pod *netlink.Handle, link netlink.Link, want []netip.Addr) []error {
	var problems []error
	if link.Attrs().Flags&net.FlagUp == 0 {
		problems = append(problems, fmt.Errorf("interface %s is down", link.Attrs().Name))
	}
	addrs, err := pod.AddrList(link, netlink.FAMILY_ALL)
	if err != nil {
		return append(problems, fmt.Errorf("list addresses of %s: %w", link.Attrs().Name, err))
	}
	for _, w := range want {
		if !slices.ContainsFunc(addrs, func(a netlink.Addr) bool { return a.IPNet.String() == hostPrefix(w).String() }) {
			problems = append(problems, fmt.Errorf("address %s is missing on %s", hostPrefix(w), link.Attrs().Name))
		}
		if err := findDefaultRoute(pod, link, w); err != nil {
			problems = append(problems, err)
		}
	}
	return problems
}

func findDefaultRoute(pod *netlink.Handle, link netlink.Link, ip netip.Addr) error {
	routes, err := pod.RouteList(link, familyOf(ip))
	if err != nil {
		return fmt.Errorf("list routes of %s: %w", link.Attrs().Name, err)
	}
	gw := gatewayFor(ip)
	for _, r := range routes {
		if isDefault(r.Dst) && r.Gw != nil && r.Gw.Equal(gw.AsSlice()) {
			return nil
		}
	}
	return fmt.Errorf("default route via %s is missing on %s", gw, link.Attrs().Name)
}

func isDefault(dst *net.IPNet) bool {
	if dst == nil {
		return true
	}
	ones, _ := dst.Mask.Size()
	return ones == 0
}

func checkHostRoutes(host *netlink.Handle, link netlink.Link, want []netip.Addr) []error {
	var problems []error
	for _, w := range want {
		routes, err := host.RouteList(link, familyOf(w))
		if err != nil {
			return append(problems, fmt.Errorf("list routes of %s: %w", link.Attrs().Name, err))
		}
		dst := hostPrefix(w).String()
		if !slices.ContainsFunc(routes, func(r netlink.Route) bool { return r.Dst != nil && r.Dst.String() == dst }) {
			problems = append(problems, fmt.Errorf("host route to %s via %s is missing", dst, link.Attrs().Name))
		}
	}
	return problems
}
