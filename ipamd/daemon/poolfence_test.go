package daemon_test

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/clientcmd"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/sandboxipam/sandboxipam/cluster/api/ipamdlease"
	"github.com/sandboxipam/sandboxipam/cluster/api/v1alpha1"
	"github.com/sandboxipam/sandboxipam/cluster/reclaim"
	"github.com/sandboxipam/sandboxipam/internal/clusterfixture"
	"github.com/sandboxipam/sandboxipam/internal/testsupport"
	"github.com/sandboxipam/sandboxipam/ipamd/api/apierr"
	"github.com/sandboxipam/sandboxipam/ipamd/daemon"
	"github.com/sandboxipam/sandboxipam/ipamd/kubeclient"
)

// Issue 37's cut: ipamd reaches the API server through a proxy the test
// cuts, while its kubelet is stopped, its Node deleted and no Pod of it
// is in the API. ipamd's Lease clock and the reclaimer's clock are fake
// and stepped together, one renew interval at a time, so the order of
// the two is by construction: ipamd fences (ADD: code 11 naming its
// Lease; DEL still works) 2m10s after its last renew, when the reclaimer
// still keeps the block for ipamd's Lease alone; the reclaimer takes it
// past the grace and another node claims it. Once the cut heals, ipamd renews, reads its blocks
// again, and reports the block as foreign (status, metric source, an
// Event on its Node); nothing more is handed out of it.
func TestPoolSourceFencesWhenCutOff(t *testing.T) {
	const name = "node-p7"
	t0 := time.Date(2026, 12, 3, 18, 0, 0, 0, time.UTC)
	e := startPoolEnv(t, name, "198.18.8.0/27")
	n := poolNode(t, e, name)
	proxy, kc := proxiedClient(t, e)
	leaseClk, rclk := clocktesting.NewFakeClock(t0), clocktesting.NewFakeClock(t0)
	d := daemon.New(n.cfg, daemon.Options{Logger: slog.New(slog.NewTextHandler(testLogWriter{t}, nil)), Kube: kc,
		PoolNow: (&fakeClock{now: t0}).Now, PoolLeaseClock: leaseClk})
	if err := d.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Stop(context.Background()) })
	cni := cniClient{socket: n.cfg.Socket}
	waitReady(t, cni)
	testsupport.Wait(t, "the first block claimed", func() (bool, string) {
		st := d.PoolSource().Status()
		return len(st.Blocks) > 0 && st.Fenced == "", fmt.Sprintf("%+v", st)
	})
	block := d.PoolSource().Status().Blocks[0]
	for i, id := range []string{"sandbox-0", "sandbox-1"} {
		n.addSandbox(id)
		if got := mustAddIPs(t, cni, id); !slices.Equal(got, hosts(block)[i:i+1]) {
			t.Fatalf("ADD %s got %v", id, got)
		}
	}
	r := startReclaimer(t, e, rclk)
	if err := e.kube.CoreV1().Nodes().Delete(t.Context(), name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	lease := "ipamd Lease kube-system/" + ipamdlease.IpamdLeaseName(name)
	blockName := v1alpha1.BlockName(netip.MustParsePrefix(block))
	waitKeep(t, r, blockName, "Lease kube-node-lease/"+name+" absent, but only for 0s")
	// Six minutes of the reclaimer's clock with ipamd renewing once a
	// minute of it: the kubelet's Lease has been absent past the grace,
	// and only ipamd's keeps the block.
	for range 6 {
		renewOnce(t, e, leaseClk, name)
		rclk.Step(time.Minute)
	}
	waitKeep(t, r, blockName, lease+" last seen to change ")

	proxy.Cut()
	elapsed := time.Duration(0)
	for d.PoolSource().Status().Fenced == "" {
		if elapsed > 3*time.Minute {
			t.Fatalf("not fenced %s after the cut", elapsed)
		}
		testsupport.Wait(t, "ipamd's renewer to wait on its clock", func() (bool, string) { return leaseClk.HasWaiters(), "" })
		leaseClk.Step(10 * time.Second)
		rclk.Step(10 * time.Second)
		elapsed += 10 * time.Second
		if elapsed == 130*time.Second {
			testsupport.Wait(t, "the fence", func() (bool, string) { st := d.PoolSource().Status(); return st.Fenced != "", fmt.Sprint(st) })
		}
	}
	if elapsed != 130*time.Second {
		t.Fatalf("fenced %s after the last renew, want 2m10s (fenceAfter 2m, then the next renew attempt)", elapsed)
	}
	// The reclaimer saw ipamd's last renew at most a step after it was
	// sent: 2m10s or 3m10s ago, within the grace.
	if v, _ := r.RunOnce(t.Context()).Verdict(blockName); v.Reclaim || (v.Keep != lease+" last seen to change 2m10s ago, within the grace 5m0s: ipamd may live" &&
		v.Keep != lease+" last seen to change 3m10s ago, within the grace 5m0s: ipamd may live") {
		t.Fatalf("at the fence the reclaimer judged %+v", v)
	}
	n.addSandbox("sandbox-2")
	_, err := cni.add(t.Context(), "sandbox-2")
	if code, msg := cniCode(err); code != apierr.CNITryAgainLater ||
		!strings.Contains(msg, "ipamd is fenced: no new address of its claimed blocks: this ipamd's Lease kube-system/sandboxipam-ipamd-node-p7 was last renewed 2m10s ago") {
		t.Fatalf("ADD while fenced: code %d %q", code, msg)
	}
	mustDel(t, cni, n, "sandbox-1")

	// ipamd here records no alive address (alive.hosts is empty), so the
	// reclaimer cannot ask it: an operator confirms the node gone
	// (condition (e), package reclaim), as the test's premise has it.
	confirm := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, ipamdlease.ConfirmNodeGoneAnnotation, e.uid)
	if _, err := e.kube.Dynamic.Resource(v1alpha1.IPBlockResource).Patch(t.Context(), blockName, types.MergePatchType, []byte(confirm), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	testsupport.Wait(t, "the reclaimer to see the confirmation", func() (bool, string) {
		for _, d := range r.RunOnce(t.Context()).Decisions {
			if d.Block == blockName {
				return d.NodeDead, fmt.Sprintf("%+v", d)
			}
		}
		return false, "no decision on " + blockName
	})
	// Past the grace since the last change it can have seen (5m or 6m
	// after t0, by its clock).
	rclk.Step(3 * time.Minute)
	if p := r.RunOnce(t.Context()); !slices.Equal(p.Reclaimed, []string{blockName}) {
		t.Fatalf("past the grace: %+v", p)
	}
	otherUID, err := clusterfixture.CreateNode(t.Context(), e.kube, "node-other")
	if err != nil {
		t.Fatal(err)
	}
	createBlock(t, e, block, "node-other", otherUID, t0)

	proxy.Heal()
	testsupport.Wait(t, "ipamd's renewer to wait on its clock", func() (bool, string) { return leaseClk.HasWaiters(), "" })
	leaseClk.Step(10 * time.Second)
	want := map[string]string{block: "node-other"}
	testsupport.Wait(t, "the reclaimed block reported foreign, the fence lifted", func() (bool, string) {
		st := d.PoolSource().Status()
		return maps.Equal(st.Foreign, want) && st.Fenced == "" && len(st.Blocks) == 0, fmt.Sprintf("%+v", st)
	})
	waitNodeEvent(t, e, name, "ForeignBlock", "lie in block "+block+" of IPPool default, which the API server records as node node-other's")
	if ips, err := cni.addAll(t.Context(), "sandbox-2"); err == nil {
		t.Fatalf("ADD after the heal got %v out of a block node-other holds", ips)
	}
}

// renewOnce steps ipamd's Lease clock by its renew interval and waits
// until the renew it wakes reached the API server.
func renewOnce(t *testing.T, e *poolEnv, clk *clocktesting.FakeClock, node string) {
	t.Helper()
	testsupport.Wait(t, "ipamd's renewer to wait on its clock", func() (bool, string) { return clk.HasWaiters(), "" })
	clk.Step(10 * time.Second)
	testsupport.Wait(t, "ipamd's renew at "+clk.Now().String(), func() (bool, string) {
		l, err := e.kube.CoordinationV1().Leases("kube-system").Get(t.Context(), ipamdlease.IpamdLeaseName(node), metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return l.Spec.RenewTime != nil && l.Spec.RenewTime.Time.Equal(clk.Now()), fmt.Sprint(l.Spec.RenewTime)
	})
}

// proxiedClient is an API client that reaches e's API server through a
// proxy the test can cut.
func proxiedClient(t *testing.T, e *poolEnv) (*testsupport.CutProxy, *kubeclient.Client) {
	t.Helper()
	rc, err := clientcmd.BuildConfigFromFlags("", e.api.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(rc.Host)
	if err != nil {
		t.Fatal(err)
	}
	p := testsupport.StartCutProxy(t, u.Host)
	rc.Host = "https://" + p.Addr()
	kc, err := kubeclient.FromConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	return p, kc
}

func startReclaimer(t *testing.T, e *poolEnv, clk *clocktesting.FakeClock) *reclaim.Reclaimer {
	t.Helper()
	cfg := reclaim.DefaultConfig()
	r, err := reclaim.New(reclaim.Clients{Kube: e.kube, Dynamic: e.kube.Dynamic},
		reclaim.Options{Config: cfg, Identity: "reclaimer-fence", Clock: clk, Logger: slog.New(slog.NewTextHandler(testLogWriter{t}, nil))})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	return r
}

// waitKeep runs passes until the reclaimer keeps block for a reason that
// starts with prefix.
func waitKeep(t *testing.T, r *reclaim.Reclaimer, block, prefix string) {
	t.Helper()
	testsupport.Wait(t, "the reclaimer to keep "+block+" for "+prefix, func() (bool, string) {
		v, ok := r.RunOnce(t.Context()).Verdict(block)
		return ok && !v.Reclaim && strings.HasPrefix(v.Keep, prefix), fmt.Sprintf("%+v", v)
	})
}

func createBlock(t *testing.T, e *poolEnv, block, node, uid string, at time.Time) {
	t.Helper()
	b := v1alpha1.NewBlock("default", netip.MustParsePrefix(block), node, uid, metav1.NewTime(at))
	u, err := v1alpha1.ToUnstructured(&b)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.kube.Dynamic.Resource(v1alpha1.IPBlockResource).Create(t.Context(), u, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// waitNodeEvent waits for one Event of reason on Node node whose note
// holds words.
func waitNodeEvent(t *testing.T, e *poolEnv, node, reason, words string) {
	t.Helper()
	testsupport.Wait(t, "a "+reason+" Event on Node "+node, func() (bool, string) {
		evs, err := e.kube.EventsV1().Events(metav1.NamespaceDefault).List(t.Context(), metav1.ListOptions{FieldSelector: "regarding.name=" + node + ",reason=" + reason})
		if err != nil {
			return false, err.Error()
		}
		for _, ev := range evs.Items {
			if strings.Contains(ev.Note, words) && ev.Regarding.Kind == "Node" && ev.ReportingController == "sandboxipam.io/ipamd" {
				return true, ""
			}
		}
		return false, fmt.Sprintf("%+v", evs.Items)
	})
}
