package kubernetes

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	k8stypes "k8s.io/apimachinery/pkg/types"

	deploy "github.com/sandboxipam/sandboxipam/deploy/kubernetes"

	"github.com/sandboxipam/sandboxipam/internal/testsupport"
	introspect "github.com/sandboxipam/sandboxipam/ipamd/introspect/schema"
)

// routeProtocol is the route protocol number ipamd marks its routes with.
const routeProtocol = "201"

// checkRoutes waits until every node holds, of ipamd's routes, exactly one
// per other node's podCIDR via that node's address of the same family.
func (c *cluster) checkRoutes(t *testing.T, state clusterState) {
	t.Helper()
	for _, n := range c.nodes {
		var want []string
		for _, m := range c.nodes {
			if m != n {
				cidrs := state.nodes[m.name].CIDRs
				want = append(want, cidrs[0].String()+" via "+m.v4.String(), cidrs[1].String()+" via "+m.v6.String())
			}
		}
		testsupport.WaitFor(t, 2*time.Minute, n.name+"'s routes to the other nodes' podCIDRs", func(ctx context.Context) error {
			return n.routesEqual(ctx, want)
		})
	}
	c.logf(t, "every node routes to the others' podCIDRs")
}

// routesEqual fails unless node n's routes of ipamd's protocol are exactly
// want ("dst via gateway" lines, in any order).
func (n *clusterNode) routesEqual(ctx context.Context, want []string) error {
	slices.Sort(want)
	got, err := n.ipamdRoutes(ctx)
	if err != nil {
		return err
	}
	if !slices.Equal(got, want) {
		return fmt.Errorf("routes %v, want %v", got, want)
	}
	return nil
}

// ipamdRoutes lists node n's main-table routes of ipamd's protocol as
// sorted "dst via gateway" lines, both families.
func (n *clusterNode) ipamdRoutes(ctx context.Context) ([]string, error) {
	return protocolRoutes(ctx, n.netns)
}

// protocolRoutes lists the main-table routes of ipamd's protocol in the
// network namespace netns as sorted "dst via gateway" lines, both
// families.
func protocolRoutes(ctx context.Context, netns string) ([]string, error) {
	var lines []string
	for _, family := range []string{"-4", "-6"} {
		out, err := runCtx(ctx, "nsenter", "--net="+netns, "--", "ip", "-j", family, "route", "show", "table", "main", "proto", routeProtocol)
		if err != nil {
			return nil, err
		}
		var routes []struct {
			Dst     string `json:"dst"`
			Gateway string `json:"gateway"`
		}
		if strings.TrimSpace(out) != "" {
			if err := json.Unmarshal([]byte(out), &routes); err != nil {
				return nil, fmt.Errorf("ip route: %w: %s", err, out)
			}
		}
		for _, r := range routes {
			lines = append(lines, r.Dst+" via "+r.Gateway)
		}
	}
	slices.Sort(lines)
	return lines, nil
}

// ipamdLosesItself SIGKILLs ipamd on node 2, and on node 3 deletes its
// state directory under its running pods and kills it too. Node 3 must
// not be ready before it has proven every address its pods hold; then a
// churn of pods on every node shows nothing handed out twice and nothing
// leaked.
func (c *cluster) ipamdLosesItself(t *testing.T, state clusterState) clusterState {
	t.Helper()
	n2, n3 := c.nodes[1], c.nodes[2]
	old2 := n2.killIPAMD(t)
	stateDir := n3.private("/var/lib/sandboxipam")
	entries, err := os.ReadDir(stateDir)
	if err != nil || len(entries) == 0 {
		t.Fatalf("%s's state directory %s: %d entries, %v", n3.name, stateDir, len(entries), err)
	}
	for _, e := range entries {
		if err := os.RemoveAll(filepath.Join(stateDir, e.Name())); err != nil {
			t.Fatal(err)
		}
	}
	old3 := n3.killIPAMD(t)
	c.logf(t, "ipamd SIGKILLed on %s; on %s its state directory deleted (%d entries) and ipamd SIGKILLed", n2.name, n3.name, len(entries))
	c.waitNewIPAMD(t, n2, old2)
	c.waitNewIPAMD(t, n3, old3)
	c.waitProvenReady(t, n3, state)
	after := c.waitAgree(t, clusterWebReplicas, inNodeCIDRs)
	if !samePods(after, state) {
		t.Fatalf("the restarts changed assignments:\nbefore %v\nafter %v", state.pods, after.pods)
	}
	// Churn: two pods deleted on every node, the ReplicaSet replaces them.
	for _, n := range c.nodes {
		for _, name := range state.onNode(n.name)[:2] {
			if err := c.api.delete(context.Background(), "/api/v1/namespaces/default/pods/"+name); err != nil {
				t.Fatal(err)
			}
		}
	}
	after = c.waitAgree(t, clusterWebReplicas, inNodeCIDRs)
	c.checkPools(t, after)
	c.logf(t, "after the kills, the lost state and a churn of %d pods: nothing twice, nothing leaked", 2*clusterNodes)
	return after
}

// waitProvenReady waits until node n's ipamd is ready, and fails the test
// if it is ever found ready while its pool is unproven or while it holds
// other than exactly the pods state says run on n.
func (c *cluster) waitProvenReady(t *testing.T, n *clusterNode, state clusterState) {
	t.Helper()
	var want []clusterPod
	for _, name := range state.onNode(n.name) {
		want = append(want, state.pods[name])
	}
	unready := 0
	testsupport.WaitFor(t, 3*time.Minute, n.name+"'s ipamd proves its pods' addresses and is ready", func(ctx context.Context) error {
		ready, err := n.ipamdReady(ctx)
		if err != nil {
			return err
		}
		if !ready {
			unready++
			return errors.New("not ready")
		}
		pool, err := n.pool(ctx)
		if err != nil {
			return err
		}
		if pool.Proof.Unproven {
			t.Fatalf("%s's ipamd is ready with an unproven pool: %+v", n.name, pool.Proof)
		}
		if err := n.ipamdHolds(ctx, want); errors.Is(err, errDisagree) {
			t.Fatalf("%s's ipamd is ready but does not hold exactly its pods: %v", n.name, err)
		}
		return err
	})
	c.logf(t, "%s's ipamd ready after proof (seen unready %d times)", n.name, unready)
}

// samePods: the same pods on the same nodes with the same sandboxes and
// addresses.
func samePods(a, b clusterState) bool {
	if len(a.pods) != len(b.pods) {
		return false
	}
	for name, p := range a.pods {
		q, ok := b.pods[name]
		if !ok || p.Node != q.Node || p.SandboxID != q.SandboxID || !slices.Equal(p.IPs, q.IPs) {
			return false
		}
	}
	return true
}

// checkPools checks that every node's ipamd holds exactly its pods'
// addresses, one of each family per pod, none unproven or quarantined,
// and that its pool is exactly the node's current podCIDRs.
func (c *cluster) checkPools(t *testing.T, state clusterState) {
	t.Helper()
	for _, n := range c.nodes {
		pods := len(state.onNode(n.name))
		var want []string
		for _, p := range state.nodes[n.name].CIDRs {
			want = append(want, p.String())
		}
		testsupport.WaitFor(t, time.Minute, n.name+"'s pool holds exactly its pods' addresses", func(ctx context.Context) error {
			pool, err := n.pool(ctx)
			if err != nil {
				return err
			}
			return poolHolds(pool, pods, want)
		})
	}
}

// poolHolds: pods assignments, one address of each family each, nothing
// unproven, and the pool's ranges exactly cidrs.
func poolHolds(pool introspect.Pool, pods int, cidrs []string) error {
	if pool.Assigned != pods || pool.Unproven != 0 || len(pool.Families) != 2 {
		return fmt.Errorf("pool %+v, want %d assignments in two families", pool, pods)
	}
	for _, f := range pool.Families {
		if f.Assigned != uint64(pods) || f.Quarantined != 0 || f.Free+f.Assigned+f.Cooling != f.Total {
			return fmt.Errorf("%s: %+v, want %d assigned", f.Family, f, pods)
		}
	}
	var ranges []string
	for _, r := range pool.Ranges {
		ranges = append(ranges, r.Prefix)
	}
	if !sameSet(ranges, cidrs) {
		return fmt.Errorf("pool ranges %v, want the node's podCIDRs %v", ranges, cidrs)
	}
	return nil
}

// reregisterNode deletes node 2's Node while its kubelet is stopped and
// its pods run, and starts the kubelet again, which registers the node
// under the same name with a new UID (and maybe a new podCIDR). The old
// pods keep their addresses while their sandboxes live; new pods get
// addresses from the new ranges; the other nodes' routes follow.
func (c *cluster) reregisterNode(t *testing.T, state clusterState) clusterState {
	t.Helper()
	ctx := context.Background()
	n2 := c.nodes[1]
	before := state.nodes[n2.name]
	oldPods := state.onNode(n2.name)
	c.stopAndDeleteNode(t, n2)
	n2.restartKubelet(t)
	after := c.waitNodeCIDRs(t, n2.name, before.UID)
	c.logf(t, "%s registered again: UID %s -> %s, podCIDRs %v -> %v", n2.name, before.UID, after.UID, before.CIDRs, after.CIDRs)
	// An old pod's addresses lie in the old ranges; every other pod's in
	// its node's current ones.
	check := func(p clusterPod, node nodeInfo) error {
		if p.Node == n2.name && slices.Contains(oldPods, p.Name) {
			return inNodeCIDRs(p, before)
		}
		return inNodeCIDRs(p, node)
	}
	state = c.waitAgree(t, clusterWebReplicas, check)
	c.checkRoutes(t, state)
	// Three more pods, one per node: node 2's comes from the new range
	// (check) and reaches node 1.
	c.scaleWeb(t, clusterWebReplicas+clusterNodes)
	state = c.waitAgree(t, clusterWebReplicas+clusterNodes, check)
	var fresh clusterPod
	for _, name := range state.onNode(n2.name) {
		if !slices.Contains(oldPods, name) {
			fresh = state.pods[name]
		}
	}
	if fresh.Name == "" {
		t.Fatalf("no new pod on %s: %v", n2.name, state.onNode(n2.name))
	}
	tcpBetween(t, state.pods[state.onNode(c.nodes[0].name)[0]], fresh)
	// The old pods go; their replacements come from the new range.
	for _, name := range oldPods {
		if err := c.api.delete(ctx, "/api/v1/namespaces/default/pods/"+name); err != nil {
			t.Fatal(err)
		}
	}
	c.scaleWeb(t, clusterWebReplicas)
	state = c.waitAgree(t, clusterWebReplicas, inNodeCIDRs)
	c.checkPools(t, state)
	c.logf(t, "%s's old pods gone, every address in the current ranges, pools exact", n2.name)
	return state
}

// scaleWeb sets the Deployment's replicas through the API, as kubectl
// scale does.
func (c *cluster) scaleWeb(t *testing.T, n int) {
	t.Helper()
	if err := c.api.mergePatch(context.Background(), "/apis/apps/v1/namespaces/default/deployments/"+webName,
		map[string]any{"spec": map[string]any{"replicas": n}}); err != nil {
		t.Fatal(err)
	}
}

// rollDaemonSet rolls ipamd across the three nodes: nothing lost, nothing
// doubled, every assignment as before.
func (c *cluster) rollDaemonSet(t *testing.T, state clusterState) {
	t.Helper()
	ctx := context.Background()
	old := c.ipamdPodUIDs(t)
	patch := map[string]any{"spec": map[string]any{"template": map[string]any{"metadata": map[string]any{
		"annotations": map[string]string{"sandboxipam.e2e/restartedAt": time.Now().UTC().Format(time.RFC3339Nano)},
	}}}}
	if err := c.api.mergePatch(ctx, dsPath, patch); err != nil {
		t.Fatal(err)
	}
	c.waitDaemonSet(t, old)
	after := c.waitAgree(t, clusterWebReplicas, inNodeCIDRs)
	if !samePods(after, state) {
		t.Fatalf("the roll changed assignments:\nbefore %v\nafter %v", state.pods, after.pods)
	}
	c.logf(t, "DaemonSet rolled across %d nodes, every assignment kept", clusterNodes)
}

// ipamdPodUIDs are the UIDs of the DaemonSet's pods now.
func (c *cluster) ipamdPodUIDs(t *testing.T) []k8stypes.UID {
	t.Helper()
	pods, err := c.ipamdPods(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var old []k8stypes.UID
	for _, p := range pods {
		old = append(old, p.UID)
	}
	return old
}

// scaleToZero scales the Deployment to zero and checks every address is
// free on every node.
func (c *cluster) scaleToZero(t *testing.T) {
	t.Helper()
	c.scaleWeb(t, 0)
	state := c.waitAgree(t, 0, inNodeCIDRs)
	c.checkPools(t, state)
	c.logf(t, "scaled to zero: every address free on every node")
}

// removeWorkloads deletes the Deployment, then the DaemonSet (its preStop
// hook removes each node's conflist) and the reclaimer's Deployment, if
// any, and waits until no node has a ready sandbox, so that every ipamd
// has seen its DELs before it goes. It runs again at cleanup, where what
// is already gone is no error.
func (c *cluster) removeWorkloads(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	if err := c.api.delete(ctx, "/apis/apps/v1/namespaces/default/deployments/"+webName); err != nil && !errors.Is(err, errNotFound) {
		t.Logf("remove workloads: %v", err)
	}
	// A down node's sandboxes outlive its pods (its kubelet is stopped).
	for _, n := range c.live() {
		waitNoReadySandboxes(ctx, t, n.cri, "default")
	}
	for _, path := range []string{dsPath, "/apis/apps/v1/namespaces/kube-system/deployments/" + deploy.ReclaimerName} {
		if err := c.api.delete(ctx, path); err != nil && !errors.Is(err, errNotFound) {
			t.Logf("remove workloads: %v", err)
		}
	}
	for _, n := range c.live() {
		waitNoReadySandboxes(ctx, t, n.cri, "")
	}
}

// stopAndDeleteNode stops n's kubelet, so it cannot register again, and
// deletes its Node, as an operator removing a dead machine would; its pods
// stay in the API.
func (c *cluster) stopAndDeleteNode(t *testing.T, n *clusterNode) {
	t.Helper()
	n.kube.stop()
	if err := c.api.delete(context.Background(), "/api/v1/nodes/"+n.name); err != nil {
		t.Fatal(err)
	}
	testsupport.WaitFor(t, time.Minute, n.name+"'s Node is gone", func(ctx context.Context) error {
		if _, err := c.getNode(ctx, n.name); !errors.Is(err, errNotFound) {
			return fmt.Errorf("still there: %v", err)
		}
		return nil
	})
}
