package kubernetes

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sandboxipam/sandboxipam/cluster/api/ipamdlease"
	"github.com/sandboxipam/sandboxipam/cluster/api/v1alpha1"
	"github.com/sandboxipam/sandboxipam/cluster/clustercheck"
	"github.com/sandboxipam/sandboxipam/cluster/clustercheck/kubesnap"
	"github.com/sandboxipam/sandboxipam/cluster/reclaim"
	deploy "github.com/sandboxipam/sandboxipam/deploy/kubernetes"
	"github.com/sandboxipam/sandboxipam/internal/testsupport"
)

// The partition test's timings: ipamd fences 45 s after its last renew
// was sent (renewInterval 10 s, so its Lease's duration is 55 s), and
// condition (d) waits ipamdlease.ReclaimWait(1m, 55s), the grace itself:
// the run stays short, and every wait is on the reclaimer's own decision.
const (
	partitionFenceAfter = 45 * time.Second
	partitionLease      = partitionFenceAfter + 10*time.Second
	partitionReplicas   = 9
)

// partitioned is a node cut off from the API server alone, its Node
// deleted and its pods force-deleted, as the reclaimer must judge it.
type partitioned struct {
	deadNode
	// addrs are the addresses its pods held at the cut, sorted.
	addrs            []string
	cutAt, deletedAt time.Time
}

// TestThreeNodePartition is issue 44's path 7 on the three-node cluster
// in pool mode (components/pool, reclaimer and routes; the reclaimer's
// grace 1m): node 2 is cut off from the API server, and only from it (its
// traffic to the API server's addresses dropped in its own network
// namespace), while its pods run on and its data plane stays up (TCP
// between a pod on node 1 and one on node 2, through the cut). Its Node is
// deleted and its pods force-deleted, as PodGC would. Past the grace and
// ipamd's Lease wait, the leading reclaimer keeps every block of node 2
// because its ipamd answers alive on the data plane: no Reclaimed Event,
// the blocks still node 2's, no two blocks overlap, and no address is held
// twice (the API's pods and every node's ipamd). Then the machine goes
// for good (kubelet stopped, ipamd killed) and an operator runs the real
// `ipamctl confirm-node-gone`: the blocks are reclaimed, each Event naming
// the confirmation. The real `ipamctl check --cluster` compares every
// node's ipamd before the cut, and after the Node's deletion names node 2
// as not compared, out of reach.
func TestThreeNodePartition(t *testing.T) {
	c, state := startPartitionCluster(t, nil)
	ipamctl := testsupport.Binary(t, "./cmd/ipamctl")
	c.checkClusterReadsEveryNode(t, ipamctl, state)

	p := c.partition(t, state, c.nodes[1])
	c.waitAgree(t, partitionReplicas, c.inNodeBlocks().check)
	c.logf(t, "%s's pods replaced on the other nodes, each in its own node's blocks", p.n.name)
	c.checkClusterCannotReach(t, ipamctl, p)
	c.partitionKept(t, p)
	c.noAddressTwice(t, p)
	c.confirmedGone(t, ipamctl, p)
}

// partition cuts node n off from the API server, checks its data plane
// through the cut, deletes its Node and force-deletes its pods.
func (c *cluster) partition(t *testing.T, state clusterState, n *clusterNode) partitioned {
	t.Helper()
	ctx := context.Background()
	p := partitioned{deadNode: c.deadNodeOf(t, state, n)}
	for _, name := range p.names {
		p.addrs = append(p.addrs, state.pods[name].IPs...)
	}
	slices.Sort(p.addrs)
	p.cutAt = time.Now()
	n.cutFromAPIServer(t)
	c.down[n.name] = true
	if err := dialIn(ctx, n.netns, apiServerAddrs[0]); err == nil {
		t.Fatalf("%s still reaches the API server at %s through the cut", n.name, apiServerAddrs[0])
	}
	if err := dialIn(ctx, c.nodes[0].netns, apiServerAddrs[0]); err != nil {
		t.Fatalf("%s cannot reach the API server: %v", c.nodes[0].name, err)
	}
	other, cut := state.pods[state.onNode(c.nodes[0].name)[0]], state.pods[p.names[0]]
	tcpBetween(t, other, cut)
	c.logf(t, "%s cut off from the API server alone (%v dropped in its namespace): TCP between %s on %s and %s on %s both ways, both families",
		n.name, apiServerAddrs, other.Name, other.Node, cut.Name, cut.Node)

	p.deletedAt = c.deleteNodeAndPods(t, p.deadNode)
	c.logf(t, "%s's Node (UID %s) deleted and its pods force-deleted; its %d pods run on, holding %v; its blocks %v",
		n.name, p.uid, len(p.names), p.addrs, keys(p.blocks))
	return p
}

// apiServerAddrs are where a node reaches the API server: the hub's
// address (kubelet's kubeconfig) and the kubernetes Service's (ipamd's
// and the reclaimer's in-cluster config).
var apiServerAddrs = []string{hubIPv4 + ":443", kubernetesServiceIP + ":443"}

// cutFromAPIServer drops n's traffic with the API server in n's own
// network namespace, both ways, and nothing else: its pods, its routes
// and its ipamd's alive port stay reachable. Both ways: with only n's
// packets to the API server dropped, the API server's packets on a watch
// already open still reach n's kubelet (only their acknowledgements are
// lost), and the kubelet, hearing its pods deleted, kills them.
func (n *clusterNode) cutFromAPIServer(t *testing.T) {
	t.Helper()
	for _, addr := range apiServerAddrs {
		host, port, _ := strings.Cut(addr, ":")
		for _, rule := range [][]string{
			{"OUTPUT", "-d", host, "-p", "tcp", "--dport", port, "-j", "DROP"},
			{"INPUT", "-s", host, "-p", "tcp", "--sport", port, "-j", "DROP"},
		} {
			inNetNS(t, n.netns, append([]string{"iptables", "-w", "-I"}, rule...)...)
			t.Cleanup(func() {
				if _, err := runCtx(context.Background(), "nsenter", append([]string{"--net=" + n.netns, "--", "iptables", "-w", "-D"}, rule...)...); err != nil {
					t.Logf("remove the cut on %s: %v", n.name, err)
				}
			})
		}
	}
}

// dialIn connects to addr from the network namespace ns, within 3 s.
func dialIn(ctx context.Context, ns, addr string) error {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	conn, err := netnsDialer(ns)(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	return conn.Close()
}

// forceDeleteReclaimerOn force-deletes the reclaimer's pod objects on n,
// as PodGC would: their containers, cut off, lead no more.
func (c *cluster) forceDeleteReclaimerOn(t *testing.T, n *clusterNode) {
	t.Helper()
	ctx := context.Background()
	var pods corev1.PodList
	sel := url.QueryEscape("app.kubernetes.io/name=" + deploy.ReclaimerName)
	if err := c.api.get(ctx, "/api/v1/namespaces/kube-system/pods?labelSelector="+sel, &pods); err != nil {
		t.Fatal(err)
	}
	now := metav1.DeleteOptions{GracePeriodSeconds: new(int64)}
	for _, p := range pods.Items {
		if p.Spec.NodeName != n.name {
			continue
		}
		if err := c.api.do(ctx, "DELETE", "/api/v1/namespaces/kube-system/pods/"+p.Name, "application/json", now, nil); err != nil && !errors.Is(err, errNotFound) {
			t.Fatal(err)
		}
	}
}

// partitionKept waits for the leading reclaimer's decision, in a pass
// made past the grace after the Node's deletion and past condition (d)'s
// wait after the cut, that keeps every block of the cut node with
// conditions (a) to (d) holding and (e) not, because its ipamd answered
// alive. Then no block of it was reclaimed, none changed hands, and no
// two blocks overlap.
func (c *cluster) partitionKept(t *testing.T, p partitioned) {
	t.Helper()
	wait := ipamdlease.ReclaimWait(reclaimerGrace, partitionLease)
	alive := fmt.Sprintf("the ipamd of node %s (UID %s) answered alive ", p.n.name, p.uid)
	var at time.Time
	testsupport.WaitFor(t, wait+3*time.Minute, "the reclaimer keeps "+p.n.name+"'s blocks, past the grace, for its ipamd answering alive", func(ctx context.Context) error {
		dec, err := c.reclaimerDecisions(ctx)
		if err != nil {
			return err
		}
		at = dec.Pass.At
		if at.Sub(p.deletedAt) <= reclaimerGrace || at.Sub(p.cutAt) <= wait {
			return fmt.Errorf("the pass at %s is %s after the Node's deletion and %s after the cut: not past the grace %s and (d)'s wait %s",
				at, at.Sub(p.deletedAt), at.Sub(p.cutAt), reclaimerGrace, wait)
		}
		for name, cidr := range p.blocks {
			v := decisionOn(dec.Pass, name)
			switch {
			case v == nil:
				t.Fatalf("%s (%s) judged no more, reclaimed under a node that runs? pass at %s", name, cidr, at)
			case v.Reclaim:
				t.Fatalf("the reclaimer reclaimed %s (%s) of a node cut off from the API server alone: %+v", name, cidr, *v)
			case !v.NodeGone || !v.LeaseExpired || !v.IpamdStopped || v.NodeDead || len(v.Pods) > 0 || !strings.HasPrefix(v.Keep, alive):
				return fmt.Errorf("%s: %+v", name, *v)
			}
		}
		return nil
	})
	ctx := context.Background()
	for name, cidr := range p.blocks {
		if n, err := c.reclaimEvents(ctx, name); err != nil || n != 0 {
			t.Fatalf("%d Reclaimed Events on %s (%s) (%v), want none", n, name, cidr, err)
		}
	}
	bs, err := c.ipBlocks(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var mine []string
	for _, b := range bs {
		if _, ok := p.blocks[b.Name]; ok && b.Spec.NodeName == p.n.name && b.Spec.NodeUID == p.uid {
			mine = append(mine, b.Name)
		}
	}
	if len(mine) != len(p.blocks) {
		t.Fatalf("of %s's blocks %v, still its own: %v", p.n.name, keys(p.blocks), mine)
	}
	if err := disjoint(bs); err != nil {
		t.Fatal(err)
	}
	c.logf(t, "the pass at %s after the cut (%s after the Node's deletion; grace %s, (d)'s wait %s) keeps all %d blocks of %s: conditions (a) to (d) hold, its ipamd answers alive; no Reclaimed Event, %d blocks, none overlapping",
		at.Sub(p.cutAt).Round(time.Second), at.Sub(p.deletedAt).Round(time.Second), reclaimerGrace, wait, len(p.blocks), p.n.name, len(bs))
}

// reclaimEvents counts the Reclaimed Events on block.
func (c *cluster) reclaimEvents(ctx context.Context, block string) (int, error) {
	var evs corev1.EventList
	sel := url.QueryEscape("involvedObject.name=" + block + ",reason=" + reclaim.EventReason)
	if err := c.api.get(ctx, "/api/v1/namespaces/default/events?fieldSelector="+sel, &evs); err != nil {
		return 0, err
	}
	return len(evs.Items), nil
}

// disjoint: no two of bs overlap.
func disjoint(bs []v1alpha1.IPBlock) error {
	for i, a := range bs {
		pa, err := a.Spec.Prefix()
		if err != nil {
			return err
		}
		for _, b := range bs[i+1:] {
			if pb, _ := b.Spec.Prefix(); pa.Overlaps(pb) {
				return fmt.Errorf("IPBlocks %s (node %s) and %s (node %s) overlap", pa, a.Spec.NodeName, pb, b.Spec.NodeName)
			}
		}
	}
	return nil
}

// noAddressTwice: across every node's ipamd (the cut node's included: the
// test reaches it on the node) and the API's pods, no address has two
// holders; each API pod's address is held by its own node's ipamd; and the
// cut node's ipamd still holds exactly its pods' addresses of the cut.
func (c *cluster) noAddressTwice(t *testing.T, p partitioned) {
	t.Helper()
	ctx := context.Background()
	holders := map[string][]string{} // address -> node/sandbox
	var cutHolds []string
	for _, n := range c.nodes {
		pods, err := n.ipamdPods(ctx)
		if err != nil {
			t.Fatalf("%s: %v", n.name, err)
		}
		for _, a := range pods {
			for _, ip := range a.addrs() {
				holders[ip] = append(holders[ip], n.name+"/"+a.SandboxID[:12])
				if n == p.n {
					cutHolds = append(cutHolds, ip)
				}
			}
		}
	}
	for ip, hs := range holders {
		if len(hs) > 1 {
			t.Fatalf("address %s held twice: %v", ip, hs)
		}
	}
	if !sameSet(cutHolds, p.addrs) {
		t.Fatalf("%s's ipamd holds %v, want its pods' addresses of the cut %v", p.n.name, sorted(cutHolds), p.addrs)
	}
	pods, err := c.webPods(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, pod := range pods {
		for _, ip := range pod.Status.PodIPs {
			hs := holders[ip.IP]
			if len(hs) != 1 || !strings.HasPrefix(hs[0], pod.Spec.NodeName+"/") {
				t.Fatalf("pod %s on %s has %s, held by %v", pod.Name, pod.Spec.NodeName, ip.IP, hs)
			}
		}
	}
	c.logf(t, "no address held twice: %d addresses across the three ipamds and %d pods in the API; %s's ipamd still holds its pods' %d",
		len(holders), len(pods), p.n.name, len(p.addrs))
}

// confirmedGone makes the cut node's machine go for good (its kubelet
// stopped, its ipamd killed: nothing answers alive any more), then runs
// the real `ipamctl confirm-node-gone --yes` with the admin kubeconfig on
// the leader's node, showing its decisions; each block is reclaimed with
// one Event naming the operator's confirmation.
func (c *cluster) confirmedGone(t *testing.T, ipamctl string, p partitioned) {
	t.Helper()
	ctx := context.Background()
	p.n.kube.stop()
	p.n.killIPAMD(t)
	goneAt := time.Now()
	leader, err := c.reclaimerLeader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ln := c.node(leader.Spec.NodeName)
	out, stderr, code := runIpamctl(ctx, t, ln.netns, ipamctl, "confirm-node-gone", p.n.name, "--kubeconfig", c.cp.Kubeconfig,
		"--decisions", "http://"+reclaimerDecisions, "--yes")
	for _, want := range []string{
		fmt.Sprintf("node %s (UID %s): %d IPBlock(s)\n", p.n.name, p.uid, len(p.blocks)),
		fmt.Sprintf("    kept: the ipamd of node %s (UID %s) answered alive ", p.n.name, p.uid),
		fmt.Sprintf("confirmed: %s=%s written on %d block(s)", ipamdlease.ConfirmNodeGoneAnnotation, p.uid, len(p.blocks)),
	} {
		if code != 0 || !strings.Contains(out, want) {
			t.Fatalf("ipamctl confirm-node-gone %s: exit %d, want 0 and %q:\n%s%s", p.n.name, code, want, out, stderr)
		}
	}
	c.logf(t, "%s's machine gone (kubelet stopped, ipamd killed); ipamctl confirm-node-gone on %s:\n%s", p.n.name, ln.name, out)
	confirmed := fmt.Sprintf("an operator confirmed node %s (UID %s) gone (annotation %s on the block)", p.n.name, p.uid, ipamdlease.ConfirmNodeGoneAnnotation)
	testsupport.WaitFor(t, reclaimerGrace+2*time.Minute, p.n.name+"'s blocks reclaimed on the confirmation", func(ctx context.Context) error {
		for name, cidr := range p.blocks {
			if err := c.api.get(ctx, ipblocksPath+"/"+name, nil); !errors.Is(err, errNotFound) {
				return fmt.Errorf("IPBlock %s still there (%v)", name, err)
			}
			if err := c.reclaimEvent(ctx, p.deadNode, name, cidr); err != nil {
				return err
			}
			var evs corev1.EventList
			sel := url.QueryEscape("involvedObject.name=" + name + ",reason=" + reclaim.EventReason)
			if err := c.api.get(ctx, "/api/v1/namespaces/default/events?fieldSelector="+sel, &evs); err != nil {
				return err
			}
			if msg := evs.Items[0].Message; !strings.Contains(msg, confirmed) {
				t.Fatalf("the Event on %s says %q, not %q", name, msg, confirmed)
			}
		}
		return nil
	})
	bs, err := c.ipBlocks(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := disjoint(bs); err != nil {
		t.Fatal(err)
	}
	c.logf(t, "%s's %d blocks reclaimed %s after its machine went, each Event naming the operator's confirmation",
		p.n.name, len(p.blocks), time.Since(goneAt).Round(time.Second))
}

// runIpamctl runs the ipamctl binary in the network namespace ns and
// returns its stdout, its stderr and its exit code.
func runIpamctl(ctx context.Context, t *testing.T, ns, bin string, args ...string) (string, string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "nsenter", append([]string{"--net=" + ns, "--", bin}, args...)...)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("ipamctl %s: %v", strings.Join(args, " "), err)
	}
	return stdout.String(), stderr.String(), cmd.ProcessState.ExitCode()
}

// checkClusterReadsEveryNode runs the real `ipamctl check --cluster -o
// json` (in the hub, with the admin kubeconfig) on the live cluster: it
// asks every node's ipamd through pods/exec, finds nothing, and compares
// exactly the addresses the pods hold.
func (c *cluster) checkClusterReadsEveryNode(t *testing.T, ipamctl string, state clusterState) {
	t.Helper()
	r, code, out := c.ipamctlCheckCluster(t, ipamctl)
	want := 0
	for _, p := range state.pods {
		want += len(p.IPs)
	}
	if code != 0 || !r.FromNodes || r.NodesRead != clusterNodes || len(r.NotCompared) != 0 || len(r.Findings) != 0 || r.HeldAddresses != want || r.Addresses != want {
		t.Fatalf("ipamctl check --cluster on the live cluster: exit %d, want 0, every node's ipamd read, %d addresses held and nothing found:\n%s", code, want, out)
	}
	c.logf(t, "ipamctl check --cluster: the ipamds of all %d nodes read through pods/exec, %d addresses held, as the API's %d pods hold; nothing found",
		r.NodesRead, r.HeldAddresses, r.Pods)
}

// checkClusterCannotReach runs the real `ipamctl check --cluster` with the
// cut node's Node deleted: it names that node as not compared, out of
// reach through the API server, beside the findings on its blocks, and
// reads the other two.
func (c *cluster) checkClusterCannotReach(t *testing.T, ipamctl string, p partitioned) {
	t.Helper()
	r, code, out := c.ipamctlCheckCluster(t, ipamctl)
	reason := "its Node is gone from the API, so its ipamd cannot be reached through the API server; "
	if code != 1 || r.NodesRead != clusterNodes-1 || len(r.NotCompared) != 1 || r.NotCompared[0].Node != p.n.name ||
		!strings.HasPrefix(r.NotCompared[0].Reason, reason) || len(r.Findings) != len(p.blocks) || r.Count(clustercheck.BlockNodeGone) != len(p.blocks) {
		t.Fatalf("ipamctl check --cluster with %s cut off and its Node deleted: exit %d, want 1, %s not compared, one block-node-gone per block:\n%s", p.n.name, code, p.n.name, out)
	}
	c.logf(t, "ipamctl check --cluster with %s's Node gone: %d nodes read, %s NOT COMPARED: %s", p.n.name, r.NodesRead, p.n.name, r.NotCompared[0].Reason)
}

// ipamctlCheckCluster runs `ipamctl check --cluster -o json` in the hub.
func (c *cluster) ipamctlCheckCluster(t *testing.T, ipamctl string) (kubesnap.Result, int, string) {
	t.Helper()
	var r kubesnap.Result
	out, stderr, code := runIpamctl(context.Background(), t, c.hub, ipamctl, "check", "--cluster", "-o", "json", "--kubeconfig", c.cp.Kubeconfig)
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("ipamctl check --cluster -o json: exit %d, %v:\n%s%s", code, err, out, stderr)
	}
	return r, code, out + stderr
}

// deleteNodeAndPods deletes d's Node, as an operator or a controller
// would, waits until it is gone, and force-deletes its pods and the
// reclaimer pod on it (PodGC's part; it is off in this cluster). It
// returns when the delete was sent.
func (c *cluster) deleteNodeAndPods(t *testing.T, d deadNode) time.Time {
	t.Helper()
	if err := c.api.delete(context.Background(), "/api/v1/nodes/"+d.n.name); err != nil {
		t.Fatal(err)
	}
	at := time.Now()
	testsupport.WaitFor(t, time.Minute, d.n.name+"'s Node is gone", func(ctx context.Context) error {
		if _, err := c.getNode(ctx, d.n.name); !errors.Is(err, errNotFound) {
			return fmt.Errorf("still there: %v", err)
		}
		return nil
	})
	c.forceDeletePods(t, d)
	c.forceDeleteReclaimerOn(t, d.n)
	return at
}

// startPartitionCluster starts the pool-mode cluster the partition tests
// cut: the CRDs, pool (after prepare, when given, edits it), DaemonSet
// with partitionFenceAfter and reclaimer, and partitionReplicas pods
// spread over the nodes, agreeing everywhere.
func startPartitionCluster(t *testing.T, prepare func(*cluster)) (*cluster, clusterState) {
	t.Helper()
	c := startCluster(t)
	t.Cleanup(func() { c.removeWorkloads(t) })
	c.installPoolCRDs(t)
	if prepare != nil {
		prepare(c)
	}
	c.applyPoolFencing(t, partitionFenceAfter)
	c.waitDaemonSet(t, nil)
	c.waitReclaimerLeader(t)
	if err := c.api.create(context.Background(), "/apis/apps/v1/namespaces/default/deployments", spreadDeployment(partitionReplicas, "")); err != nil {
		t.Fatal(err)
	}
	return c, c.waitAgree(t, partitionReplicas, c.inNodeBlocks().check)
}
