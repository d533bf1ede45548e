package docker_test

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"reflect"
	"slices"
	"testing"

	"github.com/docker/docker/client"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"github.com/sandboxipam/sandboxipam/adapters/internal/adaptertest"
	"github.com/sandboxipam/sandboxipam/conformance/fixture"
	"github.com/sandboxipam/sandboxipam/internal/testenv"
	"github.com/sandboxipam/sandboxipam/runtime"
)

// TestReportsAddressesInsideTheNetworkNamespace configures a
// dockershim-style pod's network namespace as a CNI plugin would, which
// Docker never learns of, and checks the adapter reports exactly the
// pod's global unicast address, from listings and from GetSandbox, and no
// address for a running pod without one, a stopped pod or a host-network
// pod (whose namespace is the node's, full of addresses).
func TestReportsAddressesInsideTheNetworkNamespace(t *testing.T) {
	d := dockerd.Get(t)
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	f := adaptertest.NewDockerFixture(t, ctx, d)
	adapter := newAdapter(t, d.Host)

	addressed := adaptertest.CreatePod(t, ctx, f, fixture.PodSpec{Name: "addressed", Namespace: "default", UID: "uid-addressed", Containers: []string{"app"}})
	bare := adaptertest.CreatePod(t, ctx, f, fixture.PodSpec{Name: "bare", Namespace: "default", UID: "uid-bare", Containers: []string{"app"}})
	stopped := adaptertest.CreatePod(t, ctx, f, fixture.PodSpec{Name: "stopped", Namespace: "default", UID: "uid-stopped", Containers: []string{"app"}})
	host := adaptertest.CreatePod(t, ctx, f, fixture.PodSpec{Name: "host", Namespace: "kube-system", UID: "uid-host", HostNetwork: true, Containers: []string{"agent"}})

	// The stopped pod had an address while it ran.
	configurePodNetwork(t, sandboxPID(t, ctx, d, stopped.SandboxID), "198.18.7.10/32")
	if err := f.StopPod(ctx, stopped); err != nil {
		t.Fatal(err)
	}
	configurePodNetwork(t, sandboxPID(t, ctx, d, addressed.SandboxID), "198.18.7.9/32")

	want := map[string][]netip.Addr{
		addressed.SandboxID: {netip.MustParseAddr("198.18.7.9")},
		bare.SandboxID:      nil,
		stopped.SandboxID:   nil,
		host.SandboxID:      nil,
	}
	names := map[string]string{addressed.SandboxID: "addressed", bare.SandboxID: "bare", stopped.SandboxID: "stopped", host.SandboxID: "host network"}
	// Twice: the second listing uses cached inspections.
	for round := range 2 {
		listed := adaptertest.ListByID(t, ctx, adapter)
		for id, ips := range want {
			sb, ok := listed[id]
			if !ok {
				t.Fatalf("listing %d: %s sandbox %s not listed", round+1, names[id], id)
			}
			if !slices.Equal(sb.IPs, ips) {
				t.Errorf("listing %d: %s sandbox IPs = %v, want %v", round+1, names[id], sb.IPs, ips)
			}
			got, err := adapter.GetSandbox(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got.IPs, ips) {
				t.Errorf("GetSandbox(%s sandbox) IPs = %v, want %v", names[id], got.IPs, ips)
			}
			if !reflect.DeepEqual(got, sb) {
				t.Errorf("GetSandbox = %+v\nlisted      %+v", got, sb)
			}
		}
		if got := listed[host.SandboxID]; !got.HostNetwork || got.State != runtime.StateReady {
			t.Errorf("host sandbox = %+v, want Ready on the host network", got)
		}
	}
}

// sandboxPID returns the pause process's PID as the Engine reports it.
func sandboxPID(t *testing.T, ctx context.Context, d *testenv.Docker, id string) int {
	t.Helper()
	engine, err := client.NewClientWithOpts(client.WithHost(d.Host), client.WithAPIVersionNegotiation())
	if err != nil {
		t.Fatal(err)
	}
	defer engine.Close()
	details, err := engine.ContainerInspect(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if details.State == nil || details.State.Pid <= 0 {
		t.Fatalf("sandbox %s has no process", id)
	}
	return details.State.Pid
}

// configurePodNetwork does in the namespace of process pid what a CNI
// plugin does: it raises the loopback (127.0.0.1, host scope) and adds a
// veth pair, eth0 holding prefix and a link-local 169.254.7.9/16, plus
// fe80::7/64 where IPv6 is on. Only prefix is a pod IP.
func configurePodNetwork(t *testing.T, pid int, prefix string) {
	t.Helper()
	ns, err := netns.GetFromPath(fmt.Sprintf("/proc/%d/ns/net", pid))
	if err != nil {
		t.Fatal(err)
	}
	defer ns.Close()
	handle, err := netlink.NewHandleAt(ns, unix.NETLINK_ROUTE)
	if err != nil {
		t.Fatal(err)
	}
	defer handle.Close()
	lo, err := handle.LinkByName("lo")
	if err != nil {
		t.Fatal(err)
	}
	if err := handle.LinkSetUp(lo); err != nil {
		t.Fatal(err)
	}
	// A veth pair with both ends inside: this kernel may lack the dummy
	// driver, never veth (the CNI plugin needs it).
	eth0 := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: "eth0"}, PeerName: "peer0"}
	if err := handle.LinkAdd(eth0); err != nil {
		t.Fatal(err)
	}
	for _, text := range []string{prefix, "169.254.7.9/16"} {
		addr, err := netlink.ParseAddr(text)
		if err != nil {
			t.Fatal(err)
		}
		if err := handle.AddrAdd(eth0, addr); err != nil {
			t.Fatalf("add %s: %v", text, err)
		}
	}
	linkLocal := &netlink.Addr{IPNet: &net.IPNet{IP: net.ParseIP("fe80::7"), Mask: net.CIDRMask(64, 128)}, Flags: unix.IFA_F_NODAD}
	if err := handle.AddrAdd(eth0, linkLocal); err != nil {
		t.Logf("no IPv6 in the pod's namespace (%v): checking IPv4 only", err)
	}
	if err := handle.LinkSetUp(eth0); err != nil {
		t.Fatal(err)
	}
}
