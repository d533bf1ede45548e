package kubernetes

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/sandboxipam/sandboxipam/cluster/api/v1alpha1"
	deploy "github.com/sandboxipam/sandboxipam/deploy/kubernetes"
	"github.com/sandboxipam/sandboxipam/internal/testsupport"
)

// The pool test's IPPool: 16 blocks per family, /28 (14 usable) and /124
// (16), outside the controller's podCIDRs (clusterCIDRv4/v6), so every
// address a pod gets is provably the pool's, not its node's, and outside
// the service CIDR: a pod given the kubernetes Service's address would
// take its node's route to the API server.
const (
	poolCIDRv4, poolCIDRv6   = "198.19.16.0/24", "fd00:19:16::/120"
	poolBlockV4, poolBlockV6 = 28, 124
	poolReplicas             = 90
)

const ipblocksPath = "/apis/sandboxipam.io/v1alpha1/ipblocks"

// ipamdFenceAfter is the pool test's ipSource.pool.lease.fenceAfter.
const ipamdFenceAfter = 3 * time.Minute

// TestThreeNodePool runs the three-node cluster in pool mode: the
// containerd overlay with components/pool, components/reclaimer and
// components/routes, the
// CRDs installed from the rendered manifests, a small IPPool, watermarks
// low 4 and high 20 and a 5 s return grace, the reclaimer's grace 1m.
// It reads as the list of issue 23's scenarios:
//
//   - node 2's ipamd is SIGKILLed during its first claim, after the API
//     server created the IPBlock and before ipamd heard so; restarted, it
//     adopts the block and hands out its addresses;
//   - 90 pods spread over three nodes take blocks on demand (30 a node:
//     at least three IPv4 and two IPv6 blocks each); every pod's addresses
//     lie in a block the API server records for its own node, no two
//     blocks overlap, no address is held by two pods (the API server, the
//     runtimes and the ipamds agree), and `ipamctl check --cluster`'s
//     comparison finds nothing on the live cluster and exactly the
//     duplicate the test makes by hand; every node routes the others'
//     blocks, and TCP runs between pods on node 1 and node 3;
//   - the leading reclaimer's decisions, on its node's loopback only, are
//     read from elsewhere through kubectl port-forward's path (the API
//     server, the leader's kubelet, its runtime);
//   - node 3 dies (kubelet stopped, Node deleted) with its pods in the
//     API: the reclaimer keeps its blocks past the grace for exactly those
//     pods; force-deleted, they go, and the blocks are still kept, each
//     for node 3's ipamd, which runs on and renews its own Lease (issue
//     37); once it is killed, the blocks are reclaimed (one Event each),
//     and claimed again by the live nodes once they need the whole pool;
//     node 3 registers again;
//   - the API server stopped, pods start and stop on node 1 inside its
//     blocks;
//   - scaled to zero, the empty blocks go back past the grace down to the
//     high watermark: one block per family per node.
func TestThreeNodePool(t *testing.T) {
	c := startCluster(t)
	ctx := context.Background()
	t.Cleanup(func() { c.removeWorkloads(t) })
	c.installPoolCRDs(t)
	hold := c.holdFirstClaim(t, c.nodes[1])
	c.applyPool(t)
	adopted := c.killDuringClaim(t, hold)
	c.waitDaemonSet(t, nil)
	c.waitReclaimerLeader(t)
	c.checkBlocksHeld(t)

	if err := c.api.create(ctx, "/apis/apps/v1/namespaces/default/deployments", spreadDeployment(poolReplicas, "")); err != nil {
		t.Fatal(err)
	}
	check := c.inNodeBlocks()
	state := c.waitAgree(t, poolReplicas, check.check)
	for _, n := range c.nodes {
		if got := len(state.onNode(n.name)); got != poolReplicas/clusterNodes {
			t.Fatalf("%s runs %d pods, want %d (topology spread)", n.name, got, poolReplicas/clusterNodes)
		}
	}
	// 30 pods need at least three IPv4 /28s (14 usable) and two IPv6 /124s
	// (16); with the low watermark at 4, a node claims its third /124 at
	// its 29th pod. Retried ADDs leave cooling addresses, which may cost a
	// block more.
	blocks := c.waitBlocks(t, "at least 3 IPv4 and 2 IPv6 blocks", func(v4, v6 int) bool { return v4 >= 3 && v6 >= 2 })
	c.logf(t, "%d pods on %d nodes, every address in its node's IPBlocks, none twice; blocks %v", poolReplicas, clusterNodes, blocks)
	c.checkBlockRoutes(t, state)
	c.handedOut(t, state, c.nodes[1], adopted)
	c.checkClusterShowsADuplicate(t, state)
	c.decisionsThroughPortForward(t)

	dead := c.nodeDies(t, state)
	c.deadNodeKept(t, dead)
	c.deadNodeReclaimed(t, dead)
	c.waitAgree(t, poolReplicas, check.check)
	c.freedBlocksReused(t, dead)
	c.nodeReturns(t, dead, check.check)

	c.apiServerDown(t, check.check)

	c.scaleWeb(t, 0)
	c.waitAgree(t, 0, check.check)
	blocks = c.waitBlocks(t, "exactly one block of each family", func(v4, v6 int) bool { return v4 == 1 && v6 == 1 })
	c.logf(t, "scaled to zero: blocks returned down to the high watermark, one per family per node: %v", blocks)
}

// installPoolCRDs applies the CRDs, waits until the API server serves
// them, and creates the IPPool.
func (c *cluster) installPoolCRDs(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	r := renderPool(t)
	for name, data := range r.CRDs {
		if err := c.api.create(ctx, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", json.RawMessage(data)); err != nil {
			t.Fatalf("CRD %s: %v", name, err)
		}
	}
	testsupport.WaitFor(t, time.Minute, "the API server serves IPPools and IPBlocks", func(ctx context.Context) error {
		var l struct{}
		if err := c.api.get(ctx, "/apis/sandboxipam.io/v1alpha1/ippools", &l); err != nil {
			return err
		}
		return c.api.get(ctx, ipblocksPath, &l)
	})
	p := map[string]any{
		"apiVersion": v1alpha1.Group + "/" + v1alpha1.Version, "kind": v1alpha1.IPPoolKind,
		"metadata": map[string]any{"name": "default"},
		"spec": map[string]any{
			"ipv4": map[string]any{"cidrs": []string{poolCIDRv4}, "blockSize": poolBlockV4},
			"ipv6": map[string]any{"cidrs": []string{poolCIDRv6}, "blockSize": poolBlockV6},
		},
	}
	if err := c.api.create(ctx, "/apis/sandboxipam.io/v1alpha1/ippools", p); err != nil {
		t.Fatal(err)
	}
}

// renderPool renders the containerd overlay with the pool and the
// reclaimer, as "kubectl apply -k" of a kustomization naming both would.
func renderPool(t *testing.T) deploy.Rendered {
	t.Helper()
	r, err := deploy.RenderWith("containerd", "pool", "reclaimer", "routes")
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// applyPool creates the rendered DaemonSet and reclaimer, with the image
// the nodes imported and the test's watermarks and timings; it does not
// wait for them.
func (c *cluster) applyPool(t *testing.T) { c.applyPoolFencing(t, ipamdFenceAfter) }

// applyPoolFencing is applyPool with ipamd's fenceAfter given.
func (c *cluster) applyPoolFencing(t *testing.T, fenceAfter time.Duration) {
	t.Helper()
	ctx := context.Background()
	r := renderPool(t)
	spec := &r.DaemonSet.Spec.Template.Spec
	for i := range spec.InitContainers {
		spec.InitContainers[i].Image = e2eImageRef
	}
	for i := range spec.Containers {
		spec.Containers[i].Image = e2eImageRef
		if spec.Containers[i].Name == "ipamd" {
			spec.Containers[i].Env = append(spec.Containers[i].Env,
				corev1.EnvVar{Name: "IPAMD_IPSOURCE_POOL_LOWWATERMARK", Value: "4"},
				corev1.EnvVar{Name: "IPAMD_IPSOURCE_POOL_HIGHWATERMARK", Value: "20"},
				corev1.EnvVar{Name: "IPAMD_IPSOURCE_POOL_RETURNGRACE", Value: "5s"},
				// apiServerDown starts and stops pods for longer than the
				// default 2m fence on a busy machine; ipamd's leaseDuration
				// (3m10s) is then what the dead node's reclaim waits.
				corev1.EnvVar{Name: "IPAMD_IPSOURCE_POOL_LEASE_FENCEAFTER", Value: fenceAfter.String()})
		}
	}
	configureReclaimer(r)
	objs := append(policyObjects(r), manifestObjects(r)...)
	for _, o := range append(objs, reclaimerObjects(r)...) {
		if err := c.api.create(ctx, o.path, o.obj); err != nil {
			t.Fatal(err)
		}
	}
	c.logf(t, "pool mode applied: IPPool default, the admission policies, the DaemonSet and the reclaimer created")
}

// handedOut checks that pods on node n got addresses of block p, and
// names them.
func (c *cluster) handedOut(t *testing.T, state clusterState, n *clusterNode, p netip.Prefix) {
	t.Helper()
	var in []string
	for _, name := range state.onNode(n.name) {
		for _, ip := range state.pods[name].IPs {
			if p.Contains(netip.MustParseAddr(ip)) {
				in = append(in, name+" "+ip)
			}
		}
	}
	if len(in) == 0 {
		t.Fatalf("no pod on %s has an address of the adopted block %s", n.name, p)
	}
	c.logf(t, "%d pods on %s hold addresses of the adopted block %s: %v", len(in), n.name, p, in)
}

// ipBlocks reads every IPBlock from the API server.
func (c *cluster) ipBlocks(ctx context.Context) ([]v1alpha1.IPBlock, error) {
	var l struct {
		Items []v1alpha1.IPBlock `json:"items"`
	}
	if err := c.api.get(ctx, ipblocksPath, &l); err != nil {
		return nil, err
	}
	return l.Items, nil
}

// waitBlocks waits until every node's count of IPv4 and IPv6 blocks
// satisfies want, checks that every block is the pool's, carries its
// node's UID, and overlaps nothing, and returns them as "cidr@node".
func (c *cluster) waitBlocks(t *testing.T, what string, want func(v4, v6 int) bool) []string {
	t.Helper()
	var out []string
	testsupport.WaitFor(t, 3*time.Minute, "every node to hold "+what, func(ctx context.Context) error {
		bs, err := c.ipBlocks(ctx)
		if err != nil {
			return err
		}
		if err := c.checkBlocks(ctx, bs); err != nil {
			t.Fatal(err) // never retried: a wrong block is wrong at once
		}
		out = out[:0]
		count := map[string][2]int{}
		for _, b := range bs {
			p, _ := b.Spec.Prefix()
			k := count[b.Spec.NodeName]
			k[btoi(p.Addr().Is6())]++
			count[b.Spec.NodeName] = k
			out = append(out, b.Spec.CIDR+"@"+b.Spec.NodeName)
		}
		slices.Sort(out)
		total := 0
		for _, n := range c.live() {
			k := count[n.name]
			if !want(k[0], k[1]) {
				return fmt.Errorf("%s holds %v blocks (IPv4, IPv6): %v", n.name, k, out)
			}
			total += k[0] + k[1]
		}
		if len(bs) != total {
			return fmt.Errorf("%d blocks, %d of the cluster's nodes: %v", len(bs), total, out)
		}
		return nil
	})
	return out
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// checkBlocks: every block is a block of the pool, named by its CIDR,
// claimed by a node of the cluster under its current UID, and no two
// overlap.
func (c *cluster) checkBlocks(ctx context.Context, bs []v1alpha1.IPBlock) error {
	uids := map[string]string{}
	for _, n := range c.live() {
		info, err := c.getNode(ctx, n.name)
		if err != nil {
			return err
		}
		uids[n.name] = info.UID
	}
	v4, v6 := netip.MustParsePrefix(poolCIDRv4), netip.MustParsePrefix(poolCIDRv6)
	var ps []netip.Prefix
	for _, b := range bs {
		p, err := b.Spec.Prefix()
		if err != nil || v1alpha1.BlockName(p) != b.Name {
			return fmt.Errorf("IPBlock %s: %v (cidr %s)", b.Name, err, b.Spec.CIDR)
		}
		if !(p.Bits() == poolBlockV4 && v4.Contains(p.Addr())) && !(p.Bits() == poolBlockV6 && v6.Contains(p.Addr())) {
			return fmt.Errorf("IPBlock %s lies outside the pool", p)
		}
		if uids[b.Spec.NodeName] == "" || uids[b.Spec.NodeName] != b.Spec.NodeUID {
			return fmt.Errorf("IPBlock %s claimed by %s UID %s, not a node of the cluster (%v)", p, b.Spec.NodeName, b.Spec.NodeUID, uids)
		}
		for _, q := range ps {
			if p.Overlaps(q) {
				return fmt.Errorf("IPBlocks %s and %s overlap", p, q)
			}
		}
		ps = append(ps, p)
	}
	return nil
}

// blockCheck checks pods against the IPBlocks, read at most once a second.
type blockCheck struct {
	c    *cluster
	mu   sync.Mutex
	at   time.Time
	byIP map[string][]netip.Prefix // node -> its blocks
}

func (c *cluster) inNodeBlocks() *blockCheck { return &blockCheck{c: c} }

// check: one address per family, each in a block of the pod's own node.
func (b *blockCheck) check(p clusterPod, _ nodeInfo) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if time.Since(b.at) > time.Second {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		bs, err := b.c.ipBlocks(ctx)
		if err != nil {
			return err
		}
		b.byIP, b.at = map[string][]netip.Prefix{}, time.Now()
		for _, blk := range bs {
			pfx, _ := blk.Spec.Prefix()
			b.byIP[blk.Spec.NodeName] = append(b.byIP[blk.Spec.NodeName], pfx)
		}
	}
	if len(p.IPs) != 2 {
		return fmt.Errorf("pod %s has addresses %v, want one per family", p.Name, p.IPs)
	}
	for _, s := range p.IPs {
		ip, err := netip.ParseAddr(s)
		if err != nil {
			return fmt.Errorf("pod %s: %w", p.Name, err)
		}
		if !slices.ContainsFunc(b.byIP[p.Node], func(c netip.Prefix) bool { return c.Contains(ip) }) {
			return fmt.Errorf("pod %s on %s has %s, outside the node's IPBlocks %v", p.Name, p.Node, ip, b.byIP[p.Node])
		}
	}
	return nil
}
