package routes_test

import (
	"net/netip"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sandboxipam/sandboxipam/cluster/api/v1alpha1"
	"github.com/sandboxipam/sandboxipam/internal/clusterfixture"
	"github.com/sandboxipam/sandboxipam/internal/testsupport"
	"github.com/sandboxipam/sandboxipam/ipamd/routes"
)

func block(cidr, node string) v1alpha1.IPBlock {
	return v1alpha1.NewBlock("default", netip.MustParsePrefix(cidr), node, "uid-"+node, metav1.Now())
}

// In pool mode every other node's IPBlock is routed via that node's
// InternalIP of the block's family, beside its podCIDRs (skipped blocks
// are named in the blocks' name order); this node's own
// blocks are not; a block whose Node does not exist, or whose Node has no
// InternalIP of its family, is skipped and named; a block at a podCIDR's
// destination does not displace the podCIDR's route.
func TestSyncRoutesOtherNodesBlocks(t *testing.T) {
	h, _ := hostNS(t)
	nodes := []*corev1.Node{
		k8sNode("node-a", nil, "198.18.10.1", "fd00:10::1"),
		k8sNode("node-b", []string{"198.18.101.0/24"}, "198.18.10.2", "fd00:10::2"),
		k8sNode("node-c", nil, "198.18.10.3"),
	}
	blocks := []v1alpha1.IPBlock{
		block("198.19.200.0/28", "node-a"),
		block("198.19.200.16/28", "node-b"),
		block("fd00:19:200::/124", "node-b"),
		block("198.19.200.32/28", "node-c"),
		block("fd00:19:200::10/124", "node-c"),
		block("198.19.200.48/28", "node-gone"),
		block("198.18.101.0/24", "node-c"),
	}
	st := keeper(t, h).Sync(nodes, blocks)
	want := []string{
		"198.18.101.0/24 via 198.18.10.2 proto 201",
		"198.19.200.16/28 via 198.18.10.2 proto 201",
		"198.19.200.32/28 via 198.18.10.3 proto 201",
		"fd00:19:200::/124 via fd00:10::2 proto 201",
	}
	if got := table(t, h); !slices.Equal(got, want) {
		t.Fatalf("table:\n got %q\nwant %q", got, want)
	}
	wantSkipped := []string{
		"node-gone 198.19.200.48/28: IPBlock 198.19.200.48-28 is claimed by Node node-gone, which does not exist",
		"node-c fd00:19:200::10/124: Node node-c has no IPv6 InternalIP for its IPBlock fd00:19:200::10/124",
	}
	if got := skippedOf(st); !slices.Equal(got, wantSkipped) || st.Error != "" {
		t.Fatalf("skipped:\n got %q\nwant %q\nerror %q", got, wantSkipped, st.Error)
	}

	// The blocks go back: their routes go, the podCIDR's stays.
	keeper(t, h).Sync(nodes, nil)
	if got := table(t, h); !slices.Equal(got, want[:1]) {
		t.Fatalf("table once the blocks are gone:\n got %q\nwant %q", got, want[:1])
	}
}

// The keeper's IPBlock informer against a real API server with the pool's
// CRDs: a block claimed by another node is routed once created and
// unrouted once deleted, with no Node event in between.
func TestKeeperFollowsBlocks(t *testing.T) {
	testsupport.RequireRoot(t, "ip") // network namespaces
	h, _ := hostNS(t)
	e := clusterfixture.Start(t, t.TempDir())
	t.Cleanup(e.API.Stop)
	e.InstallPoolCRDs(t)
	createNode(t, e.Client, k8sNode("node-a", nil, "198.18.10.1"))
	createNode(t, e.Client, k8sNode("node-b", nil, "198.18.10.2"))
	e.Pool(t, "default", 28, "198.19.200.0/24") // only a known pool's blocks are routed
	runKeeper(t, routes.Config{NodeName: "node-a", Blocks: true}, e.Client, routes.Options{Netlink: h, Dynamic: e.Dynamic})
	b := e.Block(t, "default", "198.19.200.16/28", "node-b", "uid-b")
	e.Block(t, "default", "198.19.200.0/28", "node-a", "uid-a")
	want := []string{"198.19.200.16/28 via 198.18.10.2 proto 201"}
	testsupport.Wait(t, "a route to node-b's block", func() (bool, string) {
		got := table(t, h)
		return slices.Equal(got, want), strings.Join(got, "; ")
	})
	if err := e.Dynamic.Resource(v1alpha1.IPBlockResource).Delete(t.Context(), b.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	testsupport.Wait(t, "node-b's block route to go", func() (bool, string) {
		got := table(t, h)
		return len(got) == 0, strings.Join(got, "; ")
	})
}
