package docker

import (
	"context"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"slices"
	"testing"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/sandboxipam/sandboxipam/runtime"
)

// TestPodAddrsKeepsGlobalUnicast filters a namespace's addresses as a
// dump returns them: only global-scope unicast addresses, both families,
// sorted, each once.
func TestPodAddrsKeepsGlobalUnicast(t *testing.T) {
	addr := func(cidr string, scope int) netlink.Addr {
		ip, ipnet, err := net.ParseCIDR(cidr)
		if err != nil {
			t.Fatal(err)
		}
		ipnet.IP = ip
		return netlink.Addr{IPNet: ipnet, Scope: scope}
	}
	addrs := []netlink.Addr{
		addr("198.18.7.9/32", unix.RT_SCOPE_UNIVERSE),
		addr("127.0.0.1/8", unix.RT_SCOPE_HOST),
		addr("::1/128", unix.RT_SCOPE_HOST),
		addr("fd00::9/64", unix.RT_SCOPE_UNIVERSE),
		addr("fe80::7/64", unix.RT_SCOPE_LINK),
		addr("169.254.7.9/16", unix.RT_SCOPE_UNIVERSE), // link-local whatever its scope
		addr("10.0.0.5/24", unix.RT_SCOPE_UNIVERSE),
		addr("10.0.0.6/24", unix.RT_SCOPE_LINK),       // "ip addr add ... scope link"
		addr("198.18.7.9/32", unix.RT_SCOPE_UNIVERSE), // on a second interface
		{IPNet: &net.IPNet{IP: net.ParseIP("::ffff:198.18.0.1"), Mask: net.CIDRMask(128, 128)}},
		{}, // no address
	}
	got := podAddrs(addrs)
	want := []netip.Addr{
		netip.MustParseAddr("10.0.0.5"),
		netip.MustParseAddr("198.18.0.1"),
		netip.MustParseAddr("198.18.7.9"),
		netip.MustParseAddr("fd00::9"),
	}
	if !slices.Equal(got, want) {
		t.Errorf("podAddrs = %v, want %v", got, want)
	}
	if got := podAddrs(nil); got != nil {
		t.Errorf("podAddrs(nil) = %v, want nil", got)
	}
}

// A sandbox whose process has exited keeps the addresses the Engine gave
// it and gains none, without an error.
func TestUnreadableNamespaceAddsNoAddresses(t *testing.T) {
	a := &Adapter{log: slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug}))}
	engine := []netip.Addr{netip.MustParseAddr("172.17.0.2")}
	const id = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	for _, pid := range []int{0, 1 << 30, os.Getpid()} { // none, no such process, not the container's
		sb := runtime.Sandbox{ID: id, State: runtime.StateReady, NetNS: "/proc/x/ns/net", IPs: slices.Clone(engine)}
		a.addNetnsIPs(context.Background(), &sb, pid)
		if !slices.Equal(sb.IPs, engine) {
			t.Errorf("pid %d: IPs = %v, want %v", pid, sb.IPs, engine)
		}
	}
	if _, err := netnsIPs(id, 1<<30); err == nil {
		t.Error("netnsIPs of no process: no error")
	}
}
