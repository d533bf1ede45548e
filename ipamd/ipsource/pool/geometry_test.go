package pool_test

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/sandboxipam/sandboxipam/cluster/api/v1alpha1"
	"github.com/sandboxipam/sandboxipam/internal/clusterfixture"
	"github.com/sandboxipam/sandboxipam/internal/kubeenv"
	"github.com/sandboxipam/sandboxipam/internal/testsupport"
	"github.com/sandboxipam/sandboxipam/ipamd/datastore"
	"github.com/sandboxipam/sandboxipam/ipamd/ipsource/pool/poolconf"
	"github.com/sandboxipam/sandboxipam/ipamd/kubeclient"
)

// Each pool edit issue 37 reproduced, on a real kube-apiserver with the
// shipped CRDs and the real pool source (item 2): the block size patch
// is refused; a CIDR moved to retiringCIDRs retires its block on the node
// (nothing new is handed out of it, the node claims elsewhere) and the
// block's IPBlock goes once its last address is free; a second pool over
// the same range with another block size is claimed from by nobody and
// reported by both pools' nodes; a pool whose nodeSelector does not
// select a node is not claimed from until the Node's labels match (item
// 4). At the end no two IPBlocks overlap and no address is held twice.
func TestPoolGeometryEdits(t *testing.T) {
	a, admin := clusterfixture.StartCounted(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	pools := admin.Dynamic.Resource(v1alpha1.IPPoolResource)
	if err := clusterfixture.CreatePool(ctx, admin.Dynamic, "default", 26, 0, "198.18.0.0/26", "198.18.1.0/26"); err != nil {
		t.Fatal(err)
	}
	cfg := poolconf.DefaultConfig()
	cfg.LowWatermark, cfg.HighWatermark, cfg.Interval, cfg.ReturnGrace = 2, 8, 20*time.Millisecond, time.Hour
	dir := t.TempDir()
	nodeA := startSim(ctx, t, a, admin, dir, "node-a", "", cfg, nil)
	first := addN(t, ctx, nodeA, "a", 3)
	x := netip.MustParsePrefix(nodeA.poolBlocks()[0])
	_, err := pools.Patch(ctx, "default", types.MergePatchType, []byte(`{"spec":{"ipv4":{"blockSize":24}}}`), metav1.PatchOptions{})
	if !apierrors.IsInvalid(err) {
		t.Fatalf("blockSize 26 -> 24: %v, want Invalid", err)
	}

	// Retire x's CIDR, as an operator does (the API server refuses to drop
	// it while its block exists): the other is all that is claimed from.
	y := netip.MustParsePrefix("198.18.0.0/26")
	if x == y {
		y = netip.MustParsePrefix("198.18.1.0/26")
	}
	patch := fmt.Sprintf(`{"spec":{"ipv4":{"cidrs":[%q],"retiringCIDRs":[%q],"blockSize":26}}}`, y, x)
	if _, err := pools.Patch(ctx, "default", types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	testsupport.Wait(t, "node A to retire "+x.String()+" and claim "+y.String(), func() (bool, string) {
		return slices.Equal(nodeA.poolBlocks(), []string{y.String()}), join(nodeA.poolBlocks())
	})
	later := addN(t, ctx, nodeA, "a-later", 3)
	for _, as := range later {
		if !y.Contains(as.IPs()[0]) {
			t.Errorf("%s got %v after %s retired, want an address of %s", as.SandboxID, as.IPs(), x, y)
		}
	}
	if bs := blockNames(t, ctx, admin); !slices.Equal(bs, []string{v1alpha1.BlockName(x), v1alpha1.BlockName(y)}) && !slices.Equal(bs, []string{v1alpha1.BlockName(y), v1alpha1.BlockName(x)}) {
		t.Errorf("IPBlocks %v while %s drains, want both", bs, x)
	}
	for _, as := range first {
		if _, _, err := nodeA.store.Release(ctx, datastore.Key{Network: "simnet", SandboxID: as.SandboxID, IfName: "eth0"}); err != nil {
			t.Fatal(err)
		}
	}
	testsupport.Wait(t, "the drained "+x.String()+"'s IPBlock to be deleted", func() (bool, string) {
		bs := blockNames(t, ctx, admin)
		return slices.Equal(bs, []string{v1alpha1.BlockName(y)}), strings.Join(bs, ",")
	})
	if _, err := pools.Patch(ctx, "default", types.MergePatchType, []byte(`{"spec":{"ipv4":{"retiringCIDRs":null}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}

	// A second pool over both CIDRs, blocks of /25, for node C.
	if err := clusterfixture.CreatePool(ctx, admin.Dynamic, "second", 25, 0, "198.18.0.0/23"); err != nil {
		t.Fatal(err)
	}
	cfgC := cfg
	cfgC.Pool = "second"
	nodeC := startSim(ctx, t, a, admin, dir, "node-c", "", cfgC, nil)
	for _, n := range []*simNode{nodeA, nodeC} {
		testsupport.Wait(t, n.name+" to report the overlap", func() (bool, string) {
			st := n.src.Status()
			return len(st.Overlaps) == 1 && strings.Contains(st.Overlaps[0], "198.18.0.0/23"), fmt.Sprintf("%+v", st)
		})
	}
	if err := nodeC.addOnce(ctx, "c-1"); err == nil || len(nodeC.poolBlocks()) != 0 {
		t.Errorf("node C of the overlapping pool: ADD %v, blocks %v; want no block and no address", err, nodeC.poolBlocks())
	}

	// A pool for labelled nodes only.
	checkNodeSelector(t, ctx, a, admin, dir, cfg)

	bs, err := clusterfixture.Blocks(ctx, admin.Dynamic)
	if err != nil {
		t.Fatal(err)
	}
	var all []netip.Prefix
	for cidr := range bs {
		all = append(all, netip.MustParsePrefix(cidr))
	}
	for i, p := range all {
		for _, q := range all[i+1:] {
			if p.Overlaps(q) {
				t.Errorf("IPBlocks %s and %s overlap", p, q)
			}
		}
	}
}

// addN ADDs n pods on node, and checks no address is given twice there.
func addN(t *testing.T, ctx context.Context, n *simNode, prefix string, count int) []datastore.Assignment {
	t.Helper()
	var out []datastore.Assignment
	seen := map[netip.Addr]bool{}
	for _, as := range n.store.Assignments() {
		for _, ip := range as.IPs() {
			seen[ip] = true
		}
	}
	for i := range count {
		as, err := n.add(ctx, fmt.Sprintf("%s-%d", prefix, i))
		if err != nil {
			t.Fatalf("%s ADD %d: %v", n.name, i, err)
		}
		for _, ip := range as.IPs() {
			if seen[ip] {
				t.Errorf("%s handed out %s twice", n.name, ip)
			}
			seen[ip] = true
		}
		out = append(out, as)
	}
	return out
}

// blockNames lists every IPBlock's name, sorted.
func blockNames(t *testing.T, ctx context.Context, admin *kubeclient.Client) []string {
	t.Helper()
	bs, err := clusterfixture.Blocks(ctx, admin.Dynamic)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, b := range bs {
		out = append(out, b.Name)
	}
	slices.Sort(out)
	return out
}

// checkNodeSelector: node D, configured for IPPool "picky" (nodeSelector
// pool=picky), claims nothing and says why until its Node has the label;
// then it claims a block of it.
func checkNodeSelector(t *testing.T, ctx context.Context, a *kubeenv.APIServer, admin *kubeclient.Client, dir string, cfg poolconf.Config) {
	t.Helper()
	p := v1alpha1.IPPool{TypeMeta: metav1.TypeMeta{APIVersion: v1alpha1.Group + "/" + v1alpha1.Version, Kind: v1alpha1.IPPoolKind},
		ObjectMeta: metav1.ObjectMeta{Name: "picky"},
		Spec: v1alpha1.IPPoolSpec{IPv4: &v1alpha1.PoolFamily{CIDRs: []string{"198.18.4.0/24"}, BlockSize: 26},
			NodeSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"pool": "picky"}}}}
	u, err := v1alpha1.ToUnstructured(&p)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := admin.Dynamic.Resource(v1alpha1.IPPoolResource).Create(ctx, u, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cfg.Pool = "picky"
	nodeD := startSim(ctx, t, a, admin, dir, "node-d", "", cfg, nil)
	testsupport.Wait(t, "node D to wait on the nodeSelector", func() (bool, string) {
		st := nodeD.src.Status()
		return strings.Contains(st.Waiting, "spec.nodeSelector pool=picky does not select this Node node-d"), st.Waiting
	})
	nodeD.waitPass(ctx)
	if blocks := nodeD.poolBlocks(); len(blocks) != 0 {
		t.Fatalf("node D claimed %v of a pool that does not select it", blocks)
	}
	if _, err := admin.CoreV1().Nodes().Patch(ctx, "node-d", types.MergePatchType, []byte(`{"metadata":{"labels":{"pool":"picky"}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	as, err := nodeD.add(ctx, "d-1")
	if err != nil || !netip.MustParsePrefix("198.18.4.0/24").Contains(as.IPs()[0]) {
		t.Fatalf("node D, labelled: %v %v, want an address of 198.18.4.0/24", as.IPs(), err)
	}
}
