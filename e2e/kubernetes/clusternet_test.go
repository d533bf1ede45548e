package kubernetes

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"testing"

	"github.com/sandboxipam/sandboxipam/internal/kubeenv"
)

// The three-node cluster's network: a "hub" network namespace holding a
// bridge and the control plane, and a namespace per node with a veth to
// that bridge. Nothing is routed to or from the host's own namespace, so
// no packet of the cluster can leave the machine.
const (
	hubBridge = "sbxbr0"
	// hubIPv4 and hubIPv6 are the hub's addresses on the bridge; the API
	// server listens on hubIPv4.
	hubIPv4 = "198.18.0.1"
	hubIPv6 = "fd00:18::1"
	// nodeSubnetBits is the prefix length of the bridge's subnets.
	nodeSubnetV4, nodeSubnetV6 = 24, 64
	// clusterCIDRs are what kube-controller-manager carves node ranges
	// from: inside 198.18.0.0/15 and fd00::/8, away from the nodes'
	// subnet and from the service CIDRs.
	clusterCIDRv4, clusterCIDRv6 = "198.18.128.0/17", "fd00:18:1::/112"
	nodeMaskV4, nodeMaskV6       = 24, 120
	// serviceCIDRv4 and serviceCIDRv6 are the Service ranges of the
	// API server and the controller manager (--service-cluster-ip-range):
	// a dual-stack cluster, IPv4 first, the primary family, so the
	// kubernetes Service and every Service that names no family stay
	// IPv4. The IPv6 range is a /112 (the API server takes none larger
	// than a /108), away from the nodes' subnet, the cluster CIDR and
	// the pool's.
	serviceCIDRv4, serviceCIDRv6 = kubeenv.DefaultServiceCIDR, "fd00:19:200::/112"
	serviceCIDRs                 = serviceCIDRv4 + "," + serviceCIDRv6
	// kubernetesServiceIP is the kubernetes Service's address (the first
	// of the IPv4 service CIDR). There is no kube-proxy: the hub holds this
	// address itself, and the API server listens on port 443 there too,
	// so a pod's in-cluster config reaches it as on a real cluster.
	kubernetesServiceIP = "198.19.200.1"
)

// netnsFile creates a network namespace bound to path with loopback up,
// and unmounts it at cleanup.
func netnsFile(t *testing.T, path string) {
	t.Helper()
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if _, err := runCtx(context.Background(), "umount", path); err != nil {
			t.Errorf("unmount netns %s: %v", path, err)
		}
	})
	run(t, "unshare", "--net="+path, "true")
	inNetNS(t, path, "ip", "link", "set", "lo", "up")
}

// inNetNS runs a command inside the network namespace at path.
func inNetNS(t *testing.T, path string, argv ...string) string {
	t.Helper()
	return run(t, "nsenter", append([]string{"--net=" + path, "--"}, argv...)...)
}

// startHub makes the hub namespace under dir: the bridge with the hub's
// addresses, and the kubernetes Service's address on loopback.
func startHub(t *testing.T, dir string) string {
	t.Helper()
	ns := filepath.Join(dir, "hub.netns")
	netnsFile(t, ns)
	inNetNS(t, ns, "ip", "link", "add", hubBridge, "type", "bridge")
	inNetNS(t, ns, "ip", "addr", "add", fmt.Sprintf("%s/%d", hubIPv4, nodeSubnetV4), "dev", hubBridge)
	inNetNS(t, ns, "ip", "addr", "add", fmt.Sprintf("%s/%d", hubIPv6, nodeSubnetV6), "dev", hubBridge, "nodad")
	inNetNS(t, ns, "ip", "addr", "add", kubernetesServiceIP+"/32", "dev", "lo")
	inNetNS(t, ns, "ip", "link", "set", hubBridge, "up")
	return ns
}

// nodeAddrs are node i's (1-based) addresses on the bridge.
func nodeAddrs(i int) (v4, v6 netip.Addr) {
	return netip.MustParseAddr(fmt.Sprintf("198.18.0.%d", 10+i)), netip.MustParseAddr(fmt.Sprintf("fd00:18::%d", 10+i))
}

// plugNode makes node i's network namespace at path: eth0, a veth to the
// hub's bridge, with the node's addresses; forwarding on, as on any node
// that routes for its pods; and a route to the kubernetes Service's address
// through the hub.
func plugNode(t *testing.T, hubNS, path string, i int) {
	t.Helper()
	netnsFile(t, path)
	v4, v6 := nodeAddrs(i)
	hostSide := fmt.Sprintf("sbxn%d", i)
	// Created inside the hub and moved: the host's namespace never holds
	// either end, even for a moment.
	inNetNS(t, hubNS, "ip", "link", "add", hostSide, "type", "veth", "peer", "name", "eth0", "netns", path)
	inNetNS(t, hubNS, "ip", "link", "set", hostSide, "master", hubBridge, "up")
	inNetNS(t, path, "ip", "addr", "add", fmt.Sprintf("%s/%d", v4, nodeSubnetV4), "dev", "eth0")
	inNetNS(t, path, "ip", "addr", "add", fmt.Sprintf("%s/%d", v6, nodeSubnetV6), "dev", "eth0", "nodad")
	inNetNS(t, path, "ip", "link", "set", "eth0", "up")
	inNetNS(t, path, "ip", "route", "add", kubernetesServiceIP+"/32", "via", hubIPv4)
	inNetNS(t, path, "sh", "-c", "echo 1 > /proc/sys/net/ipv4/ip_forward && echo 1 > /proc/sys/net/ipv6/conf/all/forwarding")
}
