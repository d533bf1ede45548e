package cni

import (
	"fmt"
	"net"
	"net/netip"

	"github.com/containernetworking/cni/pkg/types"
	current "github.com/containernetworking/cni/pkg/types/100"
)

func ipNet(p netip.Prefix) net.IPNet {
	return net.IPNet{IP: p.Addr().AsSlice(), Mask: net.CIDRMask(p.Bits(), p.Addr().BitLen())}
}

// podResult is the main plugin's result: the host veth (interface 0), the
// pod interface (1), each address as a host route with the link-local
// gateway, and one default route per address family.
func podResult(args *Args, links *podLinks, addrs []podAddress) *current.Result {
	res := &current.Result{
		CNIVersion: current.ImplementedSpecVersion,
		Interfaces: []*current.Interface{
			{Name: links.HostName, Mac: links.HostMAC.String()},
			{Name: args.IfName, Mac: links.PodMAC.String(), Sandbox: args.Netns},
		},
	}
	routed := map[netip.Addr]bool{}
	for _, a := range addrs {
		ip := a.Prefix.Addr()
		gw := gatewayFor(ip)
		res.IPs = append(res.IPs, &current.IPConfig{
			Address:   *hostPrefix(ip),
			Gateway:   gw.AsSlice(),
			Interface: current.Int(1),
		})
		if !routed[gw] {
			routed[gw] = true
			res.Routes = append(res.Routes, &types.Route{Dst: *defaultDst(ip), GW: gw.AsSlice()})
		}
	}
	return res
}

// ipamResult is the IPAM mode's result: addresses with ipamd's subnet
// length and gateway, plus the routes of the ipam config.
func ipamResult(conf *NetConf, addrs []podAddress) *current.Result {
	res := &current.Result{CNIVersion: current.ImplementedSpecVersion, Routes: conf.Routes}
	for _, a := range addrs {
		ipc := &current.IPConfig{Address: ipNet(a.Prefix)}
		if a.Gateway.IsValid() {
			ipc.Gateway = a.Gateway.AsSlice()
		}
		res.IPs = append(res.IPs, ipc)
	}
	return res
}

// prevAddresses reads the addresses of prevResult that CHECK verifies: in
// the main plugin those on the pod interface, in IPAM mode all of them.
func prevAddresses(conf *NetConf, args *Args) ([]netip.Addr, error) {
	if conf.PrevResult == nil {
		return nil, types.NewError(types.ErrInvalidNetworkConfig, "CHECK needs prevResult in the network config", "")
	}
	prev, err := current.NewResultFromResult(conf.PrevResult)
	if err != nil {
		return nil, types.NewError(types.ErrDecodingFailure, "convert prevResult", err.Error())
	}
	podIndex := -1
	for i, iface := range prev.Interfaces {
		if iface.Name == args.IfName && iface.Sandbox != "" {
			podIndex = i
		}
	}
	var out []netip.Addr
	for _, ipc := range prev.IPs {
		if !conf.IPAMMode && (ipc.Interface == nil || *ipc.Interface != podIndex) {
			continue
		}
		ip, ok := netip.AddrFromSlice(ipc.Address.IP)
		if !ok {
			return nil, types.NewError(types.ErrDecodingFailure, "prevResult holds a bad address", ipc.Address.String())
		}
		out = append(out, ip.Unmap())
	}
	if len(out) == 0 {
		return nil, types.NewError(ErrCheckFailed, fmt.Sprintf("prevResult holds no address for %s", args.IfName), "")
	}
	return out, nil
}
