package cni_test

import (
	"net"
	"testing"
	"time"

	"github.com/containernetworking/plugins/pkg/ns"
	"github.com/vishvananda/netlink"

	"github.com/sandboxipam/sandboxipam/cni/internal/cnitest"
)

// hostServiceIP stands in for a node address: it sits on the host
// namespace's loopback, reachable from the pod only through the routing
// scheme (pod default route via 169.254.1.1, host route back via the veth).
const hostServiceIP = "198.18.255.254"

// TestPodReachesHostThroughVeth opens a TCP connection from the pod to the
// host namespace and checks that both ends see the pod's exact address.
func TestPodReachesHostThroughVeth(t *testing.T) {
	env := newPodEnv(t)
	cnitest.MustSucceed(t, env.Call(t, "ADD", cnitest.NetConf(env.IPAMD.Socket, "1.1.0", "")), "ADD")
	addHostServiceIP(t, env.HostNS)

	var listener net.Listener
	inNetns(t, env.HostNS, func() (err error) {
		listener, err = net.Listen("tcp4", hostServiceIP+":0")
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
		conn, err := net.DialTimeout("tcp4", listener.Addr().String(), 10*time.Second)
		if err != nil {
			return err
		}
		local = conn.LocalAddr()
		return conn.Close()
	})
	want := cnitest.FirstPoolIP.String()
	if ip := local.(*net.TCPAddr).IP.String(); ip != want {
		t.Errorf("pod dialled from %s, want %s", ip, want)
	}
	if remote := <-accepted; remote == nil || remote.(*net.TCPAddr).IP.String() != want {
		t.Errorf("host saw the connection from %v, want %s", remote, want)
	}
}

func addHostServiceIP(t *testing.T, hostNS string) {
	t.Helper()
	h := cnitest.HandleIn(t, hostNS)
	lo, err := h.LinkByName("lo")
	if err != nil {
		t.Fatalf("lo in the host namespace: %v", err)
	}
	if err := h.LinkSetUp(lo); err != nil {
		t.Fatalf("set lo up: %v", err)
	}
	addr := &netlink.Addr{IPNet: &net.IPNet{IP: net.ParseIP(hostServiceIP), Mask: net.CIDRMask(32, 32)}}
	if err := h.AddrAdd(lo, addr); err != nil {
		t.Fatalf("add %s to the host namespace: %v", hostServiceIP, err)
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
