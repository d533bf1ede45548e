package routes_test

import (
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sandboxipam/sandboxipam/internal/testsupport"
	"github.com/sandboxipam/sandboxipam/ipamd/routes"
)

// hostNS makes a network namespace standing for one node's host: a veth
// to a peer namespace, 198.18.10.1/24 and fd00:10::1/64 on it. It returns
// a netlink handle in it and the namespace's name for `ip -n`.
func hostNS(t *testing.T) (*netlink.Handle, string) {
	t.Helper()
	testsupport.RequireRoot(t, "ip") // network namespaces
	pid := fmt.Sprint(os.Getpid())
	host, peer := "sbxrt-host-"+pid, "sbxrt-peer-"+pid
	for _, ns := range []string{host, peer} {
		run(t, "ip", "netns", "add", ns)
		t.Cleanup(func() { _ = exec.Command("ip", "netns", "delete", ns).Run() })
	}
	run(t, "ip", "-n", host, "link", "add", "v0", "type", "veth", "peer", "name", "v1", "netns", peer)
	run(t, "ip", "-n", host, "addr", "add", "198.18.10.1/24", "dev", "v0")
	run(t, "ip", "-n", host, "addr", "add", "fd00:10::1/64", "dev", "v0", "nodad")
	run(t, "ip", "-n", host, "link", "set", "v0", "up")
	run(t, "ip", "-n", peer, "link", "set", "v1", "up")
	ns, err := netns.GetFromPath(filepath.Join("/run/netns", host))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ns.Close() })
	h, err := netlink.NewHandleAt(ns)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Close)
	return h, host
}

func run(t *testing.T, args ...string) {
	t.Helper()
	if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

func k8sNode(name string, cidrs []string, ips ...string) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.NodeSpec{PodCIDRs: cidrs}}
	if len(cidrs) > 0 {
		n.Spec.PodCIDR = cidrs[0]
	}
	for _, ip := range ips {
		n.Status.Addresses = append(n.Status.Addresses, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: ip})
	}
	n.Status.Addresses = append(n.Status.Addresses, corev1.NodeAddress{Type: corev1.NodeHostName, Address: name})
	return n
}

// table lists the main table's gateway routes as "dst via gw proto N",
// sorted.
func table(t *testing.T, h *netlink.Handle) []string {
	t.Helper()
	rs, err := h.RouteListFiltered(netlink.FAMILY_ALL, &netlink.Route{Table: unix.RT_TABLE_MAIN}, netlink.RT_FILTER_TABLE)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range rs {
		if r.Gw == nil || r.Dst == nil {
			continue
		}
		out = append(out, fmt.Sprintf("%s via %s proto %d", r.Dst, r.Gw, r.Protocol))
	}
	slices.Sort(out)
	return out
}

func keeper(t *testing.T, h *netlink.Handle) *routes.Keeper {
	t.Helper()
	k, err := routes.New(routes.Config{NodeName: "node-a"}, nil, routes.Options{Netlink: h, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func skippedOf(st routes.Status) []string {
	var out []string
	for _, s := range st.Skipped {
		out = append(out, s.Node+" "+s.Dst+": "+s.Reason)
	}
	return out
}

// Routes follow the Nodes: added for each other node's ranges (both
// families) via its InternalIP, replaced when a node's address or range
// changes, deleted when the node goes; a node whose InternalIP is not on
// a connected subnet is skipped and named; routes of other protocols are
// never touched, across a restart too, which removes exactly ipamd's
// stale routes.
func TestSyncKeepsOnlyItsOwnRoutes(t *testing.T) {
	h, host := hostNS(t)
	// Someone else's routes: one to a range a node will ask for, one
	// elsewhere.
	run(t, "ip", "-n", host, "route", "add", "198.18.103.0/24", "via", "198.18.10.9", "proto", "static")
	run(t, "ip", "-n", host, "route", "add", "198.18.200.0/24", "via", "198.18.10.7", "proto", "boot")
	run(t, "ip", "-n", host, "route", "add", "198.19.6.0/24", "via", "198.18.10.254", "proto", "static")
	foreign := []string{"198.18.103.0/24 via 198.18.10.9 proto 4", "198.18.200.0/24 via 198.18.10.7 proto 3", "198.19.6.0/24 via 198.18.10.254 proto 4"}

	nodes := []*corev1.Node{
		k8sNode("node-a", []string{"198.18.100.0/24", "fd00:100::/64"}, "198.18.10.1", "fd00:10::1"),
		k8sNode("node-b", []string{"198.18.101.0/24", "fd00:101::/64"}, "198.18.10.2", "fd00:10::2"),
		k8sNode("node-c", []string{"198.18.102.0/24"}, "198.19.5.5"),
		k8sNode("node-d", []string{"198.18.103.0/24"}, "198.18.10.4"),
		k8sNode("node-e", []string{"fd00:105::/64"}, "198.18.10.5"),
		k8sNode("node-f", []string{"198.18.106.0/24"}, "198.19.6.6"),
	}
	k := keeper(t, h)
	st := k.Sync(nodes, nil)
	want := append([]string{"198.18.101.0/24 via 198.18.10.2 proto 201", "fd00:101::/64 via fd00:10::2 proto 201"}, foreign...)
	slices.Sort(want)
	if got := table(t, h); !slices.Equal(got, want) {
		t.Fatalf("table after the first sync:\n got %q\nwant %q", got, want)
	}
	wantSkipped := []string{
		"node-c 198.18.102.0/24: Node node-c's InternalIP 198.19.5.5 is not reachable from this node (network is unreachable)",
		"node-e fd00:105::/64: Node node-e has no IPv6 InternalIP for its podCIDR fd00:105::/64",
		"node-f 198.18.106.0/24: Node node-f's InternalIP 198.19.6.6 is not on a directly connected subnet (the route to it goes via 198.18.10.254)",
		"node-d 198.18.103.0/24: a route to 198.18.103.0/24 of protocol 4 (not ipamd's 201) is in the main table; it is left alone",
	}
	if got := skippedOf(st); !slices.Equal(got, wantSkipped) || st.Error != "" {
		t.Fatalf("skipped:\n got %q\nwant %q\nerror %q", got, wantSkipped, st.Error)
	}
	if len(st.Routes) != 2 || st.Routes[0] != (routes.Route{Node: "node-b", Dst: "198.18.101.0/24", Via: "198.18.10.2", Dev: "v0"}) {
		t.Fatalf("status routes = %+v", st.Routes)
	}

	// node-b registered again: a new range and a new address.
	nodes[1] = k8sNode("node-b", []string{"198.18.111.0/24", "fd00:101::/64"}, "198.18.10.3", "fd00:10::3")
	k.Sync(nodes, nil)
	want = append([]string{"198.18.111.0/24 via 198.18.10.3 proto 201", "fd00:101::/64 via fd00:10::3 proto 201"}, foreign...)
	slices.Sort(want)
	if got := table(t, h); !slices.Equal(got, want) {
		t.Fatalf("table after node-b changed:\n got %q\nwant %q", got, want)
	}

	// A restart after node-b was deleted while ipamd was down, with a
	// stale route of ipamd's to a range nobody has: a new keeper removes
	// exactly its own stale routes.
	run(t, "ip", "-n", host, "route", "add", "198.18.150.0/24", "via", "198.18.10.8", "proto", "201")
	st = keeper(t, h).Sync([]*corev1.Node{nodes[0], nodes[2], nodes[3]}, nil)
	if got := table(t, h); !slices.Equal(got, foreign) {
		t.Fatalf("table after the restart:\n got %q\nwant only the foreign routes %q", got, foreign)
	}
	if len(st.Routes) != 0 || len(st.Skipped) != 2 {
		t.Fatalf("status after the restart: %+v", st)
	}
}
