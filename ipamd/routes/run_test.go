package routes_test

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/sandboxipam/sandboxipam/internal/clusterfixture"
	"github.com/sandboxipam/sandboxipam/internal/testsupport"
	"github.com/sandboxipam/sandboxipam/ipamd/kubeclient"
	"github.com/sandboxipam/sandboxipam/ipamd/routes"
)

func startAPIServer(t *testing.T) *kubeclient.Client {
	t.Helper()
	e := clusterfixture.Start(t, t.TempDir())
	t.Cleanup(e.API.Stop)
	c, err := kubeclient.FromConfig(e.Config)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func createNode(t *testing.T, c kubernetes.Interface, n *corev1.Node) {
	t.Helper()
	status := n.Status
	got, err := c.CoreV1().Nodes().Create(t.Context(), n, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// The InternalIP is status: kubelet writes it with the status
	// subresource, and so does the test.
	got.Status = status
	if _, err := c.CoreV1().Nodes().UpdateStatus(t.Context(), got, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// The keeper's informer over all Nodes, against a real API server: a
// route per other node once synced, a node off the connected subnet
// skipped and counted, a deleted Node's route gone.
func TestKeeperFollowsNodes(t *testing.T) {
	testsupport.RequireRoot(t, "ip") // network namespaces
	h, _ := hostNS(t)
	c := startAPIServer(t)
	createNode(t, c, k8sNode("node-a", []string{"198.18.100.0/24"}, "198.18.10.1"))
	createNode(t, c, k8sNode("node-b", []string{"198.18.101.0/24", "fd00:101::/64"}, "198.18.10.2", "fd00:10::2"))
	createNode(t, c, k8sNode("node-c", []string{"198.18.102.0/24"}, "198.19.5.5"))
	k := runKeeper(t, routes.Config{NodeName: "node-a"}, c, routes.Options{Netlink: h})
	if err := k.WaitSyncs(t.Context(), 1); err != nil {
		t.Fatal(err)
	}
	want := []string{"198.18.101.0/24 via 198.18.10.2 proto 201", "fd00:101::/64 via fd00:10::2 proto 201"}
	testsupport.Wait(t, "routes to node-b", func() (bool, string) {
		got := table(t, h)
		return slices.Equal(got, want), strings.Join(got, "; ")
	})
	st := k.Status()
	if len(st.Skipped) != 1 || st.Skipped[0].Node != "node-c" || !strings.Contains(st.Skipped[0].Reason, "Node node-c's InternalIP 198.19.5.5") {
		t.Fatalf("skipped = %+v, want node-c named", st.Skipped)
	}
	cs := k.Collectors()
	if n := testutil.ToFloat64(cs[0]); n != 2 {
		t.Errorf("ipamd_node_routes = %v, want 2", n)
	}
	if n := testutil.ToFloat64(cs[1]); n != 1 {
		t.Errorf("ipamd_node_routes_skipped = %v, want 1", n)
	}
	if err := c.CoreV1().Nodes().Delete(t.Context(), "node-b", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	testsupport.Wait(t, "node-b's routes to go", func() (bool, string) {
		got := table(t, h)
		return len(got) == 0, strings.Join(got, "; ")
	})
	if kc := c.Requests(); kc == 0 {
		t.Errorf("the client counted no requests")
	}
}

// runKeeper starts a keeper that runs until the test ends; its Run must
// then return no error.
func runKeeper(t *testing.T, cfg routes.Config, c kubernetes.Interface, opts routes.Options) *routes.Keeper {
	t.Helper()
	opts.Logger = slog.New(slog.DiscardHandler)
	k, err := routes.New(cfg, c, opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- k.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	return k
}
