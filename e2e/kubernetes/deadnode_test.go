package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sandboxipam/sandboxipam/cluster/api/ipamdlease"
	"github.com/sandboxipam/sandboxipam/cluster/reclaim"
	"github.com/sandboxipam/sandboxipam/internal/testsupport"
)

// deadNode is a node as it died: its Node's UID, its blocks by IPBlock
// name, and per block the pods ("default/name address") with an address
// in it, as the reclaimer names them.
type deadNode struct {
	n      *clusterNode
	uid    string
	blocks map[string]netip.Prefix
	pods   map[string][]string
	names  []string // its web pods
}

// nodeDies stops node 3's kubelet (its pods' sandboxes run on) and
// deletes its Node: its pods stay in the API, running as far as the API
// server knows (the pod garbage collector is off in this cluster).
func (c *cluster) nodeDies(t *testing.T, state clusterState) deadNode {
	t.Helper()
	n := c.nodes[2]
	d := c.deadNodeOf(t, state, n)
	c.down[n.name] = true
	c.stopAndDeleteNode(t, n)
	c.logf(t, "%s died: kubelet stopped, Node (UID %s) deleted; its %d pods stay in the API; its blocks %v", n.name, d.uid, len(d.names), keys(d.blocks))
	return d
}

// deadNodeOf is node n as it is about to die: its Node's UID, its blocks
// as the API server has them, and its pods of state in each.
func (c *cluster) deadNodeOf(t *testing.T, state clusterState, n *clusterNode) deadNode {
	t.Helper()
	ctx := context.Background()
	d := deadNode{n: n, uid: state.nodes[n.name].UID, blocks: map[string]netip.Prefix{}, pods: map[string][]string{}, names: state.onNode(n.name)}
	bs, err := c.ipBlocks(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range bs {
		if b.Spec.NodeName == n.name {
			d.blocks[b.Name], _ = b.Spec.Prefix()
		}
	}
	for _, name := range d.names {
		for _, ip := range state.pods[name].IPs {
			for b, p := range d.blocks {
				if p.Contains(netip.MustParseAddr(ip)) {
					d.pods[b] = append(d.pods[b], "default/"+name+" "+ip)
				}
			}
		}
	}
	for b := range d.pods {
		slices.Sort(d.pods[b])
	}
	return d
}

// deadNodeKept waits until the leading reclaimer has judged every block of
// the dead node with its Node gone and its Lease expired past the grace,
// and kept each block some of its pods have an address in, naming exactly
// those pods; a block none has an address in has gone meanwhile, on that
// evidence alone.
func (c *cluster) deadNodeKept(t *testing.T, d deadNode) {
	t.Helper()
	var kept []string
	testsupport.WaitFor(t, 3*reclaimerGrace, "the reclaimer keeps "+d.n.name+"'s blocks, past the grace, for their pods", func(ctx context.Context) error {
		dec, err := c.reclaimerDecisions(ctx)
		if err != nil {
			return err
		}
		kept = kept[:0]
		for name, p := range d.blocks {
			v := decisionOn(dec.Pass, name)
			want := d.pods[name]
			switch {
			case v == nil:
				return fmt.Errorf("no decision on %s (%s) in the pass at %s", name, p, dec.Pass.At)
			case !v.NodeGone || !v.LeaseExpired:
				return fmt.Errorf("%s: %s", name, v.Keep)
			case v.Reclaim:
				t.Fatalf("the reclaimer reclaimed %s (%s) under a live ipamd: %+v", name, p, *v)
			case len(want) == 0 && !strings.HasPrefix(v.Keep, ipamdLeaseWords(d)):
				return fmt.Errorf("%s holds no pod's address, yet is judged %+v", name, *v)
			case len(want) == 0:
				kept = append(kept, fmt.Sprintf("%s for its ipamd", p))
				continue
			case !slices.Equal(v.Pods, want):
				t.Fatalf("the reclaimer judged %s (%s) %+v past the grace; want kept for exactly %v", name, p, *v, want)
			}
			kept = append(kept, fmt.Sprintf("%s for %d pods", p, len(v.Pods)))
		}
		return nil
	})
	slices.Sort(kept)
	c.logf(t, "past the grace, the reclaimer keeps %s's blocks for exactly the pods in them: %v", d.n.name, kept)
}

// decisionOn is the pass's decision on block, nil when it has none.
func decisionOn(p *reclaim.Pass, block string) *reclaim.Decision {
	for i := range p.Decisions {
		if p.Decisions[i].Block == block {
			return &p.Decisions[i]
		}
	}
	return nil
}

// deadNodeReclaimed force-deletes the dead node's pods (grace 0: their
// kubelet is stopped); the ReplicaSet starts their replacements on the
// live nodes. Its ipamd pod object goes too, as the pod garbage collector
// (off in this cluster) would delete it: the DaemonSet controller has
// asked to, no kubelet can finish it, and while it lingers the
// DaemonSet's rolling update counts it unavailable and rolls no further.
// Its ipamd process runs on, and the blocks are kept for it
// (deadNodeKeptForIpamd); once it is killed, each block goes, with
// exactly one Event naming the four pieces of evidence.
func (c *cluster) deadNodeReclaimed(t *testing.T, d deadNode) {
	t.Helper()
	c.forceDeletePods(t, d)
	c.deadNodeKeptForIpamd(t, d)
	d.n.killIPAMD(t)
	c.logf(t, "%s's ipamd SIGKILLed (its kubelet stopped, nothing restarts it): its Lease is renewed no more", d.n.name)
	// The wait: the grace, or ipamd's leaseDuration (fenceAfter +
	// renewInterval) when longer, then a pass.
	testsupport.WaitFor(t, ipamdFenceAfter+3*time.Minute, d.n.name+"'s blocks reclaimed, each with its Event", func(ctx context.Context) error {
		for name, p := range d.blocks {
			if err := c.api.get(ctx, ipblocksPath+"/"+name, nil); !errors.Is(err, errNotFound) {
				return fmt.Errorf("IPBlock %s still there (%v)", name, err)
			}
			if err := c.reclaimEvent(ctx, d, name, p); err != nil {
				return err
			}
		}
		return nil
	})
	c.logf(t, "%s's %d blocks reclaimed, one Event each naming the evidence", d.n.name, len(d.blocks))
}

// ipamdLeaseWords start the reclaimer's reason to keep a block of d's
// while its ipamd renews its Lease.
func ipamdLeaseWords(d deadNode) string {
	return "ipamd Lease kube-system/" + ipamdlease.IpamdLeaseName(d.n.name) + " last seen to change "
}

// deadNodeKeptForIpamd is issue 37's case: the dead node's kubelet is
// stopped, its Node deleted, its pods deleted from the API, but its ipamd
// runs on and renews its own Lease, so the pods' sandboxes may still hold
// their addresses. The three old conditions hold for every block; each is
// kept, the reclaimer's decision naming ipamd's Lease.
func (c *cluster) deadNodeKeptForIpamd(t *testing.T, d deadNode) {
	t.Helper()
	testsupport.WaitFor(t, 2*time.Minute, "the reclaimer keeps "+d.n.name+"'s blocks for its live ipamd", func(ctx context.Context) error {
		dec, err := c.reclaimerDecisions(ctx)
		if err != nil {
			return err
		}
		for name, p := range d.blocks {
			v := decisionOn(dec.Pass, name)
			switch {
			case v == nil:
				t.Fatalf("%s (%s) judged no more, reclaimed under a live ipamd? pass at %s", name, p, dec.Pass.At)
			case v.Reclaim:
				t.Fatalf("the reclaimer reclaimed %s (%s) under a live ipamd: %+v", name, p, *v)
			case !v.NodeGone || !v.LeaseExpired || len(v.Pods) > 0 || v.IpamdStopped || !strings.HasPrefix(v.Keep, ipamdLeaseWords(d)):
				return fmt.Errorf("%s: %+v", name, *v)
			}
		}
		return nil
	})
	c.logf(t, "%s's Node, kubelet Lease and pods gone, its ipamd alive: the reclaimer keeps all %d blocks, naming ipamd's Lease", d.n.name, len(d.blocks))
}

// forceDeletePods force-deletes the dead node's pods (grace 0: their
// kubelet is stopped), as PodGC would, and its ipamd pod object (whose
// container runs on).
func (c *cluster) forceDeletePods(t *testing.T, d deadNode) {
	t.Helper()
	ctx := context.Background()
	ipamds, err := c.ipamdPods(ctx)
	if err != nil {
		t.Fatal(err)
	}
	paths := []string{}
	for _, name := range d.names {
		paths = append(paths, "/api/v1/namespaces/default/pods/"+name)
	}
	for _, p := range ipamds {
		if p.Spec.NodeName == d.n.name {
			paths = append(paths, "/api/v1/namespaces/"+p.Namespace+"/pods/"+p.Name)
		}
	}
	now := metav1.DeleteOptions{GracePeriodSeconds: new(int64)}
	for _, path := range paths {
		if err := c.api.do(ctx, "DELETE", path, "application/json", now, nil); err != nil && !errors.Is(err, errNotFound) {
			t.Fatal(err)
		}
	}
	c.logf(t, "%d pods of %s force-deleted, %d of them its web pods", len(paths), d.n.name, len(d.names))
}

// reclaimEvent checks the one Event of block's reclaim.
func (c *cluster) reclaimEvent(ctx context.Context, d deadNode, block string, p netip.Prefix) error {
	var evs corev1.EventList
	sel := url.QueryEscape("involvedObject.name=" + block + ",reason=" + reclaim.EventReason)
	if err := c.api.get(ctx, "/api/v1/namespaces/default/events?fieldSelector="+sel, &evs); err != nil {
		return err
	}
	if len(evs.Items) != 1 {
		return fmt.Errorf("%d Events on %s, want 1", len(evs.Items), block)
	}
	msg := evs.Items[0].Message
	for _, want := range []string{
		fmt.Sprintf("Reclaimed %s of node %s (UID %s): ", p, d.n.name, d.uid),
		fmt.Sprintf("Node %s (UID %s) does not exist; Lease kube-node-lease/%s ", d.n.name, d.uid, d.n.name),
		fmt.Sprintf("longer than the grace %s; no Pod has a status.podIPs address in %s; ", reclaimerGrace, p),
		fmt.Sprintf("; ipamd Lease kube-system/%s unchanged for ", ipamdlease.IpamdLeaseName(d.n.name)),
	} {
		if !strings.Contains(msg, want) {
			return fmt.Errorf("the Event on %s says %q, not %q", block, msg, want)
		}
	}
	return nil
}

// freedBlocksReused makes the live nodes need every block of the pool
// (their ipamds rolled with a low watermark above the pool's size) and
// checks that the dead node's freed CIDRs are claimed again, by them,
// under their UIDs, and that the cluster check finds nothing; then the
// watermarks go back.
func (c *cluster) freedBlocksReused(t *testing.T, d deadNode) {
	t.Helper()
	c.setWatermarks(t, "1000", "2000")
	var taken []string
	testsupport.WaitFor(t, 3*time.Minute, "the live nodes claim every block of the pool", func(ctx context.Context) error {
		bs, err := c.ipBlocks(ctx)
		if err != nil {
			return err
		}
		if err := c.checkBlocks(ctx, bs); err != nil {
			t.Fatal(err) // never retried: a wrong block is wrong at once
		}
		if len(bs) != 32 {
			return fmt.Errorf("%d blocks, want the pool's 16 of each family", len(bs))
		}
		taken = taken[:0]
		for _, b := range bs {
			if _, ok := d.blocks[b.Name]; ok {
				taken = append(taken, b.Spec.CIDR+"@"+b.Spec.NodeName)
			}
		}
		if len(taken) != len(d.blocks) {
			return fmt.Errorf("of %s's freed blocks %v, claimed again: %v", d.n.name, keys(d.blocks), taken)
		}
		return nil
	})
	slices.Sort(taken)
	c.checkBlocksHeld(t)
	if res := c.clusterCheck(t); len(res.Findings) != 0 {
		t.Fatalf("ipamctl check --cluster with the freed blocks claimed again: %+v", res.Findings)
	}
	c.logf(t, "the pool full: %s's freed blocks claimed again by the live nodes %v; the cluster check finds nothing", d.n.name, taken)
	c.setWatermarks(t, "4", "20")
}

// setWatermarks rolls ipamd with the pool's watermarks changed, as an
// operator editing the DaemonSet would.
func (c *cluster) setWatermarks(t *testing.T, low, high string) {
	t.Helper()
	ctx := context.Background()
	old := c.ipamdPodUIDs(t)
	var ds appsv1.DaemonSet
	if err := c.api.get(ctx, dsPath, &ds); err != nil {
		t.Fatal(err)
	}
	for i, ctr := range ds.Spec.Template.Spec.Containers {
		if ctr.Name == "ipamd" {
			env := setEnv(ctr.Env, "IPAMD_IPSOURCE_POOL_LOWWATERMARK", low)
			ds.Spec.Template.Spec.Containers[i].Env = setEnv(env, "IPAMD_IPSOURCE_POOL_HIGHWATERMARK", high)
		}
	}
	if err := c.api.do(ctx, "PUT", dsPath, "application/json", &ds, nil); err != nil {
		t.Fatal(err)
	}
	c.waitDaemonSet(t, old)
	c.logf(t, "ipamd rolled with the watermarks low %s, high %s", low, high)
}

// setEnv sets name to value in env, adding it when absent.
func setEnv(env []corev1.EnvVar, name, value string) []corev1.EnvVar {
	for i := range env {
		if env[i].Name == name {
			env[i].Value = value
			return env
		}
	}
	return append(env, corev1.EnvVar{Name: name, Value: value})
}

// nodeReturns starts the dead node's kubelet again: it registers the node
// under a new UID, removes the sandboxes of its deleted pods, and its
// ipamd is rolled to the DaemonSet's current template.
func (c *cluster) nodeReturns(t *testing.T, d deadNode, check rangeCheck) clusterState {
	t.Helper()
	d.n.restartKubelet(t)
	info := c.waitNodeCIDRs(t, d.n.name, d.uid)
	delete(c.down, d.n.name)
	c.waitDaemonSet(t, nil)
	state := c.waitAgree(t, poolReplicas, check)
	c.logf(t, "%s registered again (UID %s -> %s), its old sandboxes gone; %d pods agree on %d nodes", d.n.name, d.uid, info.UID, poolReplicas, clusterNodes)
	return state
}
