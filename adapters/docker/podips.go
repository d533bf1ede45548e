package docker

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"github.com/sandboxipam/sandboxipam/adapters/internal/proc"
	"github.com/sandboxipam/sandboxipam/runtime"
)

// netnsDumpAttempts bounds the address dumps retried when the kernel
// reports one interrupted by a concurrent change.
const netnsDumpAttempts = 3

// netnsIPs returns the pod IPs inside the network namespace of sandbox
// id's process pid: every global-scope unicast address (IPv4 and IPv6;
// not loopback, not link-local) on any of its interfaces, sorted and
// without duplicates. The CNI plugin put them there; Docker never knew
// them. The adapter's own threads stay where they are: netlink opens its
// socket inside the namespace on a locked thread and moves that back.
//
// It returns an error when the namespace cannot be read, most often
// because the process just exited, or when pid no longer belongs to the
// container once the namespace is open (its PID was reused).
func netnsIPs(id string, pid int) ([]netip.Addr, error) {
	path := fmt.Sprintf("/proc/%d/ns/net", pid)
	ns, err := netns.GetFromPath(path)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	defer ns.Close()
	// The handle pins the namespace it names; checking the process only
	// now makes sure it is the sandbox's, not a reused PID's.
	if !proc.InContainer(pid, id) {
		return nil, fmt.Errorf("process %d is no longer the sandbox's", pid)
	}
	handle, err := netlink.NewHandleAt(ns, unix.NETLINK_ROUTE)
	if err != nil {
		return nil, fmt.Errorf("open netlink in %s: %w", path, err)
	}
	defer handle.Close()
	var addrs []netlink.Addr
	for range netnsDumpAttempts {
		addrs, err = handle.AddrList(nil, netlink.FAMILY_ALL)
		if !errors.Is(err, netlink.ErrDumpInterrupted) {
			break
		}
	}
	if err != nil {
		return nil, fmt.Errorf("list addresses in %s: %w", path, err)
	}
	return podAddrs(addrs), nil
}

// podAddrs keeps the global-scope unicast addresses, sorted and unique.
func podAddrs(addrs []netlink.Addr) []netip.Addr {
	var ips []netip.Addr
	for _, addr := range addrs {
		if addr.IPNet == nil || addr.Scope != unix.RT_SCOPE_UNIVERSE {
			continue
		}
		ip, ok := netip.AddrFromSlice(addr.IP)
		if !ok {
			continue
		}
		ip = ip.Unmap()
		if !ip.IsGlobalUnicast() {
			continue // loopback, link-local, multicast, unspecified
		}
		ips = append(ips, ip)
	}
	slices.SortFunc(ips, netip.Addr.Compare)
	return slices.Compact(ips)
}

// addNetnsIPs adds to a running, non-host-network sandbox the addresses
// inside its network namespace. A namespace that cannot be read (the
// process just exited) adds none and is no error: the sandbox is listed
// as the Engine reported it.
func (a *Adapter) addNetnsIPs(ctx context.Context, sandbox *runtime.Sandbox, pid int) {
	if sandbox.HostNetwork || sandbox.NetNS == "" || pid <= 0 {
		return
	}
	ips, err := netnsIPs(sandbox.ID, pid)
	if err != nil {
		a.log.DebugContext(ctx, "sandbox network namespace unreadable; reporting no addresses from it", "id", sandbox.ID, "error", err)
		return
	}
	sandbox.IPs = mergeIPs(sandbox.IPs, ips)
}

// mergeIPs returns the union of two address lists, sorted and unique.
func mergeIPs(a, b []netip.Addr) []netip.Addr {
	if len(a)+len(b) == 0 {
		return nil
	}
	merged := slices.Concat(a, b)
	slices.SortFunc(merged, netip.Addr.Compare)
	return slices.Compact(merged)
}
