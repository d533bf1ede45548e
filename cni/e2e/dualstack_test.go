package e2e_test

import (
	"encoding/json"
	"fmt"
	"net"
	"net/netip"
	"os"
	"testing"
	"time"

	current "github.com/containernetworking/cni/pkg/types/100"
	"github.com/containernetworking/plugins/pkg/ns"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/sandboxipam/sandboxipam/cni/internal/cnitest"
	"github.com/sandboxipam/sandboxipam/internal/testsupport"
	"github.com/sandboxipam/sandboxipam/ipamd/api/wire"
)

// Host-side service addresses on the test host namespace's loopback,
// reachable from the pod only through the routing scheme.
var (
	hostService4 = netip.MustParseAddr("198.19.255.254")
	hostService6 = netip.MustParseAddr("fd00:ffff::1")
)

// TestDualStackPodAgainstRealIPAMD: with ipamd's static pool holding an
// IPv4 /24 and an IPv6 /64, one ADD gives the pod one address of each
// family under its one key; the pod reaches the host side over both at
// once (no DAD, no neighbour discovery to wait for); CHECK passes; DEL
// releases both together.
func TestDualStackPodAgainstRealIPAMD(t *testing.T) {
	testsupport.RequireRoot(t, "ip")
	ipamd := startIPAMDWith(t, os.TempDir(), 30*time.Second, "198.18.0.0/24", "fd00:12::/64")
	env := cnitest.NewPodEnv(t, ipamd.Socket)
	conf := cnitest.NetConf(ipamd.Socket, "1.1.0", "")

	add := env.Call(t, "ADD", conf)
	cnitest.MustSucceed(t, add, "ADD")
	held, ok := ipamd.Daemon.Store().Lookup(env.Key())
	if !ok {
		t.Fatalf("ipamd holds nothing for %v after ADD", env.Key())
	}
	v4, v6 := netip.MustParseAddr("198.18.0.1"), netip.MustParseAddr("fd00:12::1")
	if ips := held.IPs(); len(ips) != 2 || ips[0] != v4 || ips[1] != v6 {
		t.Fatalf("ipamd holds %v, want [%s %s] under one key", ips, v4, v6)
	}
	var res current.Result
	if err := json.Unmarshal(add.Stdout, &res); err != nil {
		t.Fatalf("decode result: %v", err)
	}
	if len(res.IPs) != 2 || res.IPs[0].Address.String() != "198.18.0.1/32" || res.IPs[1].Address.String() != "fd00:12::1/128" ||
		res.IPs[0].Gateway.String() != "169.254.1.1" || res.IPs[1].Gateway.String() != "fe80::ecee:eeff:feee:eeee" {
		t.Fatalf("result ips %s", add.Stdout)
	}
	if len(res.Routes) != 2 || res.Routes[0].Dst.String() != "0.0.0.0/0" || res.Routes[1].Dst.String() != "::/0" {
		t.Fatalf("result routes %s", add.Stdout)
	}

	// The pod's IPv6 address is usable at once: not tentative, and the
	// host maps it to the pod permanently.
	pod := cnitest.HandleIn(t, env.PodNS)
	eth0, err := pod.LinkByName("eth0")
	if err != nil {
		t.Fatalf("eth0 in the pod: %v", err)
	}
	addrs6, err := pod.AddrList(eth0, netlink.FAMILY_V6)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, a := range addrs6 {
		if a.IPNet.String() == "fd00:12::1/128" {
			found = true
			if a.Flags&unix.IFA_F_TENTATIVE != 0 || a.Flags&unix.IFA_F_NODAD == 0 {
				t.Errorf("pod address %s flags %#x: want NODAD, never tentative", a.IPNet, a.Flags)
			}
		}
	}
	if !found {
		t.Fatalf("pod eth0 IPv6 addresses %v, want fd00:12::1/128", addrs6)
	}
	host := cnitest.HandleIn(t, env.HostNS)
	veth, err := host.LinkByName(env.HostVeth())
	if err != nil {
		t.Fatalf("host veth: %v", err)
	}
	neighs, err := host.NeighList(veth.Attrs().Index, netlink.FAMILY_V6)
	if err != nil {
		t.Fatal(err)
	}
	permanent := false
	for _, n := range neighs {
		if n.IP.Equal(v6.AsSlice()) && n.State == netlink.NUD_PERMANENT && n.HardwareAddr.String() == eth0.Attrs().HardwareAddr.String() {
			permanent = true
		}
	}
	if !permanent {
		t.Fatalf("host veth neighbours %v: want %s permanent at the pod's MAC %s", neighs, v6, eth0.Attrs().HardwareAddr)
	}
	for _, family := range []int{netlink.FAMILY_V4, netlink.FAMILY_V6} {
		routes, err := host.RouteList(veth, family)
		want := "198.18.0.1/32"
		if family == netlink.FAMILY_V6 {
			want = "fd00:12::1/128"
		}
		ok := false
		for _, r := range routes {
			ok = ok || (r.Dst != nil && r.Dst.String() == want)
		}
		if err != nil || !ok {
			t.Fatalf("host routes %v (%v): want %s via the veth", routes, err, want)
		}
	}

	// Both families reach the host side, and the host sees the pod's
	// exact addresses.
	addLoopbackAddrs(t, env.HostNS, hostService4, hostService6)
	dialHost(t, env, "tcp4", hostService4, v4)
	dialHost(t, env, "tcp6", hostService6, v6)

	cnitest.MustSucceed(t, env.Call(t, "CHECK", withPrevResult(t, conf, add.Stdout)), "CHECK")
	cnitest.MustSucceed(t, env.Call(t, "DEL", conf), "DEL")
	if code := cnitest.CheckViaWire(t, ipamd.Socket, env.Key()); code != wire.CodeNotFound {
		t.Errorf("ipamd Check after DEL: code %d, want NotFound", code)
	}
	if st := ipamd.Daemon.Store().Stats(); st.Assigned != 0 || st.Cooling != 2 {
		t.Fatalf("after DEL: %+v, want both addresses released together, cooling", st)
	}
}

func addLoopbackAddrs(t *testing.T, hostNS string, ips ...netip.Addr) {
	t.Helper()
	h := cnitest.HandleIn(t, hostNS)
	lo, err := h.LinkByName("lo")
	if err != nil {
		t.Fatalf("lo in the host namespace: %v", err)
	}
	if err := h.LinkSetUp(lo); err != nil {
		t.Fatalf("set lo up: %v", err)
	}
	for _, ip := range ips {
		addr := &netlink.Addr{IPNet: &net.IPNet{IP: ip.AsSlice(), Mask: net.CIDRMask(ip.BitLen(), ip.BitLen())}}
		if ip.Is6() {
			addr.Flags = unix.IFA_F_NODAD
		}
		if err := h.AddrAdd(lo, addr); err != nil {
			t.Fatalf("add %s to the host namespace: %v", ip, err)
		}
	}
}

// dialHost opens a TCP connection from the pod to service in the host
// namespace and checks that both ends see the pod's address from.
func dialHost(t *testing.T, env *cnitest.PodEnv, network string, service, from netip.Addr) {
	t.Helper()
	var listener net.Listener
	inNetns(t, env.HostNS, func() (err error) {
		listener, err = net.Listen(network, netip.AddrPortFrom(service, 0).String())
		return err
	})
	defer listener.Close()
	accepted := make(chan net.Addr, 1)
	go func() {
		conn, err := listener.Accept()
		if err != nil {
			accepted <- nil
			return
		}
		accepted <- conn.RemoteAddr()
		conn.Close()
	}()
	var local net.Addr
	inNetns(t, env.PodNS, func() error {
		conn, err := net.DialTimeout(network, listener.Addr().String(), 10*time.Second)
		if err != nil {
			return err
		}
		local = conn.LocalAddr()
		return conn.Close()
	})
	if ip := local.(*net.TCPAddr).AddrPort().Addr().Unmap(); ip != from {
		t.Errorf("%s: pod dialled from %s, want %s", network, ip, from)
	}
	if remote := <-accepted; remote == nil || remote.(*net.TCPAddr).AddrPort().Addr().Unmap() != from {
		t.Errorf("%s: host saw the connection from %v, want %s", network, remote, from)
	}
}

// inNetns runs f on a thread inside the named namespace; sockets it opens
// stay in that namespace.
func inNetns(t *testing.T, name string, f func() error) {
	t.Helper()
	target, err := ns.GetNS(cnitest.NetnsPath(name))
	if err != nil {
		t.Fatalf("open netns %s: %v", name, err)
	}
	defer target.Close()
	if err := target.Do(func(ns.NetNS) error { return f() }); err != nil {
		t.Fatalf("in netns %s: %v", name, err)
	}
}

// TestDualStackIPAMModeAndGCAgainstRealIPAMD: in IPAM mode a dual-stack
// ADD returns both addresses with ipamd's subnet lengths; GC releases an
// attachment that is not valid as one, both of its addresses.
func TestDualStackIPAMModeAndGCAgainstRealIPAMD(t *testing.T) {
	testsupport.RequireRoot(t, "ip")
	ipamd := startIPAMDWith(t, os.TempDir(), 30*time.Second, "198.18.0.0/24", "fd00:12::/64")
	env := cnitest.NewPodEnv(t, ipamd.Socket)
	ids := []string{cnitest.SandboxID("keep"), cnitest.SandboxID("drop")}
	want := [][]string{{"198.18.0.1/24", "fd00:12::1/64"}, {"198.18.0.2/24", "fd00:12::2/64"}}
	for i, id := range ids {
		o := cnitest.Run(t, cnitest.Call{Command: "ADD", HostNetns: env.HostNS, SandboxID: id, IfName: "eth0",
			Netns: cnitest.NetnsPath(env.PodNS), Args: cnitest.PodArgs(id), Config: cnitest.IPAMConf(ipamd.Socket)})
		cnitest.MustSucceed(t, o, "IPAM ADD")
		var res current.Result
		if err := json.Unmarshal(o.Stdout, &res); err != nil {
			t.Fatalf("decode result: %v", err)
		}
		if len(res.IPs) != 2 || res.IPs[0].Address.String() != want[i][0] || res.IPs[1].Address.String() != want[i][1] {
			t.Fatalf("IPAM result for %s: %s, want %v", id, o.Stdout, want[i])
		}
	}
	gc := fmt.Appendf(nil, `{"cniVersion":"1.1.0","name":"podnet","type":"sandboxipam","ipamdSocket":%q,`+
		`"cni.dev/valid-attachments":[{"containerID":%q,"ifname":"eth0"}]}`, ipamd.Socket, ids[0])
	cnitest.MustSucceed(t, cnitest.Run(t, cnitest.Call{Command: "GC", HostNetns: env.HostNS, Config: gc}), "GC")
	left := ipamd.Daemon.Store().Assignments()
	if len(left) != 1 || left[0].SandboxID != ids[0] || len(left[0].IPs()) != 2 {
		t.Fatalf("assignments after GC: %+v, want only the valid one with its two addresses", left)
	}
	if st := ipamd.Daemon.Store().Stats(); st.Cooling != 2 {
		t.Fatalf("after GC: %+v, want the dropped attachment's two addresses cooling", st)
	}
}
