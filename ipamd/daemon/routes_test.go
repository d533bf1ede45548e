package daemon_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/sandboxipam/sandboxipam/internal/testsupport"
	"github.com/sandboxipam/sandboxipam/ipamd/daemon"
	"github.com/sandboxipam/sandboxipam/ipamd/introspect/client"
)

// routesNS makes a network namespace with 198.18.10.1/24 on a veth and
// returns a netlink handle in it.
func routesNS(t *testing.T) *netlink.Handle {
	t.Helper()
	name := fmt.Sprintf("sbxd-routes-%d", os.Getpid())
	sh := func(args ...string) {
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	sh("netns", "add", name)
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "delete", name).Run() })
	sh("-n", name, "link", "add", "v0", "type", "veth", "peer", "name", "v1")
	sh("-n", name, "addr", "add", "198.18.10.1/24", "dev", "v0")
	sh("-n", name, "link", "set", "v0", "up")
	sh("-n", name, "link", "set", "v1", "up")
	ns, err := netns.GetFromPath(filepath.Join("/run/netns", name))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ns.Close() })
	h, err := netlink.NewHandleAt(ns)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Close)
	return h
}

func nodeWithIP(t *testing.T, cs kubernetes.Interface, name, cidr, ip string) {
	t.Helper()
	n := createNode(t, cs, name, cidr)
	n.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: ip}}
	if _, err := cs.CoreV1().Nodes().UpdateStatus(t.Context(), n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// routes.nodes through the daemon: ipamctl routes (GET /v1/routes) lists
// the route to the reachable node and names the node whose InternalIP is
// off the connected subnet, which the metric counts.
func TestDaemonRoutesReportSkippedNode(t *testing.T) {
	a, cs := startAPIServer(t)
	h := routesNS(t)
	nodeWithIP(t, cs, "node-1", "198.18.1.0/29", "198.18.10.1")
	nodeWithIP(t, cs, "node-2", "198.18.2.0/29", "198.18.10.2")
	nodeWithIP(t, cs, "node-3", "198.18.3.0/29", "198.19.3.3")
	n := nodeConfig(t, a, "node-1")
	n.cfg.Routes.Nodes = true
	d := daemon.New(n.cfg, daemon.Options{RoutesNetlink: h})
	if err := d.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Stop(t.Context()) })
	intro := client.New(d.IntrospectionAddr().String(), nil)
	testsupport.Wait(t, "ipamctl routes to show node-2's route and node-3 skipped", func() (bool, string) {
		r, err := intro.Routes(t.Context())
		if err != nil {
			return false, err.Error()
		}
		ok := len(r.Routes) == 1 && r.Routes[0].Node == "node-2" && r.Routes[0].Dst == "198.18.2.0/29" && r.Routes[0].Via == "198.18.10.2" &&
			len(r.Skipped) == 1 && r.Skipped[0].Node == "node-3" && strings.Contains(r.Skipped[0].Reason, "Node node-3's InternalIP 198.19.3.3")
		return ok, fmt.Sprintf("%+v", r)
	})
	m := scrape(t, d.MetricsAddr().String())
	for _, line := range []string{"ipamd_node_routes 1", "ipamd_node_routes_skipped 1"} {
		if !strings.Contains(m, line) {
			t.Errorf("/metrics lacks %q", line)
		}
	}
}
