package daemon_test

import (
	"context"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/sandboxipam/sandboxipam/internal/clusterfixture"
	"github.com/sandboxipam/sandboxipam/internal/kubeenv"
	"github.com/sandboxipam/sandboxipam/internal/testsupport"
	"github.com/sandboxipam/sandboxipam/ipamd/config"
	"github.com/sandboxipam/sandboxipam/ipamd/introspect/client"
)

// startAPIServer runs etcd and kube-apiserver for the test, or skips
// (fails under CI=true) when tools/kubernetes/build.sh has not built them.
func startAPIServer(t *testing.T) (*kubeenv.APIServer, kubernetes.Interface) {
	t.Helper()
	e := clusterfixture.Start(t, t.TempDir())
	t.Cleanup(e.API.Stop)
	return e.API, e.Client
}

func createNode(t *testing.T, cs kubernetes.Interface, name string, cidrs ...string) *corev1.Node {
	t.Helper()
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.NodeSpec{PodCIDRs: cidrs}}
	if len(cidrs) > 0 {
		n.Spec.PodCIDR = cidrs[0]
	}
	got, err := cs.CoreV1().Nodes().Create(t.Context(), n, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create Node %s: %v", name, err)
	}
	return got
}

// poolRanges renders GET /v1/pool's ranges as "prefix" or "prefix
// retiring(held N)", and what the pool waits for.
func poolRanges(t *testing.T, c *client.Client) (string, string) {
	t.Helper()
	p, err := c.Pool(t.Context())
	if err != nil {
		t.Fatalf("GET /v1/pool: %v", err)
	}
	var out []string
	for _, r := range p.Ranges {
		s := r.Prefix
		if r.Retiring {
			s += " retiring"
		}
		out = append(out, s)
	}
	return strings.Join(out, ","), p.Waiting
}

func waitPool(t *testing.T, c *client.Client, want string) {
	t.Helper()
	testsupport.Wait(t, "the pool's ranges to be "+want, func() (bool, string) {
		got, waiting := poolRanges(t, c)
		return got == want, got + " waiting: " + waiting
	})
}

func nodeConfig(t *testing.T, a *kubeenv.APIServer, name string) *node {
	t.Helper()
	n := newNode(t, "198.18.0.0/28")
	n.cfg.IPSource.Type = config.SourcePodCIDR
	n.cfg.IPSource.NodeName = name
	n.cfg.IPSource.PodCIDR.Kubeconfig = a.Kubeconfig
	n.cfg.CNI.ConfListPath = n.dir + "/net.d/10-test.conflist"
	if err := n.cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	return n
}

// The daemon's wiring of the podCIDR source, against a real API server
// (the source's own behaviour is tested beside it, in
// ipamd/ipsource/podcidr): not ready, no conflist, CNI STATUS and ADD
// "try again later" naming the Node until it has podCIDRs; then ready,
// the conflist, and addresses of those ranges over the socket. The Node
// registered again with another range: /v1/pool and /metrics show the old
// range retiring while its pod lives and drop it after its DEL. Restarted
// with the API server stopped, ipamd restores the checkpoint's ranges at
// start and serves ADD and DEL from them.
func TestDaemonWiresThePodCIDRSource(t *testing.T) {
	a, cs := startAPIServer(t)
	ctx := t.Context()
	const name = "node-1"
	n := nodeConfig(t, a, name)
	d, cni, intro := startInProcess(t, n)

	createNode(t, cs, name)
	testsupport.Wait(t, "the first runtime listing to prove the new store", func() (bool, string) {
		return !d.Store().Unproven(), readyWhy(t, intro)
	})
	testsupport.Wait(t, "the podCIDR source to list its Node", func() (bool, string) {
		src := d.PodCIDRSource()
		select {
		case <-src.Synced():
			return true, ""
		default:
			return false, "not synced"
		}
	})
	_, err := cni.add(ctx, "sandbox-early")
	if err == nil || !strings.Contains(err.Error(), "waiting for Node node-1's spec.podCIDRs") {
		t.Fatalf("ADD before podCIDRs = %v, want try-again naming the Node's spec.podCIDRs", err)
	}
	if ready, why, _ := intro.Ready(ctx); ready || !strings.Contains(why, "waiting for Node node-1's spec.podCIDRs") {
		t.Fatalf("readyz before podCIDRs = %v %q", ready, why)
	}
	wantStatus := "the pool has no range yet: waiting for Node node-1's spec.podCIDRs; the CNI conflist " + n.cfg.CNI.ConfListPath + " is not written yet"
	if st, err := cni.status(ctx); err != nil || st.Ready || st.Message != wantStatus {
		t.Fatalf("CNI STATUS before podCIDRs = %v, %v", st, err)
	}
	if _, err := os.Stat(n.cfg.CNI.ConfListPath); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("conflist before podCIDRs: %v, want none", err)
	}

	patch := []byte(`{"spec":{"podCIDR":"198.18.1.0/29","podCIDRs":["198.18.1.0/29","fd00:1::/125"]}}`)
	if _, err := cs.CoreV1().Nodes().Patch(ctx, name, "application/merge-patch+json", patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	waitPool(t, intro, "198.18.1.0/29,fd00:1::/125")
	waitReady(t, cni)
	testsupport.Wait(t, "the conflist", func() (bool, string) {
		_, err := os.Stat(n.cfg.CNI.ConfListPath)
		return err == nil, "readyz: " + readyWhy(t, intro)
	})
	n.addSandbox("sandbox-a")
	old := mustAddIPs(t, cni, "sandbox-a")
	if want := []string{"198.18.1.1/29", "fd00:1::1/125"}; !slices.Equal(old, want) {
		t.Fatalf("first pod got %v, want %v", old, want)
	}

	// Registered again: a new UID and a new range.
	uid1 := nodeUID(t, cs, name)
	if err := cs.CoreV1().Nodes().Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitPool(t, intro, "198.18.1.0/29 retiring,fd00:1::/125 retiring")
	uid2 := string(createNode(t, cs, name, "198.18.2.0/29", "fd00:2::/125").UID)
	if uid2 == uid1 {
		t.Fatalf("the Node registered again kept its UID %s", uid1)
	}
	waitPool(t, intro, "198.18.1.0/29 retiring,198.18.2.0/29,fd00:1::/125 retiring,fd00:2::/125")
	m := scrape(t, d.MetricsAddr().String())
	for _, line := range []string{
		`ipamd_retiring_range_held_addresses{family="ipv4",group="node",range="198.18.1.0/29"} 1`,
		`ipamd_retiring_range_held_addresses{family="ipv6",group="node",range="fd00:1::/125"} 1`,
	} {
		if !strings.Contains(m, line) {
			t.Errorf("/metrics lacks %q", line)
		}
	}
	n.addSandbox("sandbox-b")
	if got, want := mustAddIPs(t, cni, "sandbox-b"), []string{"198.18.2.1/29", "fd00:2::1/125"}; !slices.Equal(got, want) {
		t.Fatalf("pod after the new range got %v, want %v", got, want)
	}
	if released, err := cni.del(ctx, "sandbox-a"); err != nil || !released {
		t.Fatalf("DEL of the old pod = %v, %v", released, err)
	}
	waitPool(t, intro, "198.18.2.0/29,fd00:2::/125")

	// Restart with the API server gone: the checkpoint's ranges serve.
	if err := d.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	a.Stop()
	_, cni2, intro2 := startInProcess(t, n)
	waitPool(t, intro2, "198.18.2.0/29,fd00:2::/125")
	if released, err := cni2.del(ctx, "sandbox-b"); err != nil || !released {
		t.Fatalf("DEL with the API server down = %v, %v", released, err)
	}
	n.removeSandbox("sandbox-b")
	n.addSandbox("sandbox-i")
	waitReady(t, cni2)
	for _, ip := range mustAddIPs(t, cni2, "sandbox-i") {
		if !strings.HasPrefix(ip, "198.18.2.") && !strings.HasPrefix(ip, "fd00:2::") {
			t.Fatalf("ADD with the API server down got %s, outside the checkpoint's ranges", ip)
		}
	}
}

func readyWhy(t *testing.T, c *client.Client) string {
	_, why, err := c.Ready(t.Context())
	if err != nil {
		return err.Error()
	}
	return why
}

func nodeUID(t *testing.T, cs kubernetes.Interface, name string) string {
	t.Helper()
	n, err := cs.CoreV1().Nodes().Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return string(n.UID)
}

// mustDel DELs each of ids, which must release its addresses, and takes
// its sandbox away from the runtime, as the sandbox goes after its DEL.
func mustDel(t *testing.T, c cniClient, n *node, ids ...string) {
	t.Helper()
	for _, id := range ids {
		if released, err := c.del(t.Context(), id); err != nil || !released {
			t.Fatalf("DEL %s = %v, %v", id, released, err)
		}
		n.removeSandbox(id)
	}
}

// mustAddIPs ADDs and returns every address (one per family).
func mustAddIPs(t *testing.T, c cniClient, id string) []string {
	t.Helper()
	ips, err := c.addAll(t.Context(), id)
	if err != nil {
		t.Fatalf("ADD %s: %v", id, err)
	}
	return ips
}
