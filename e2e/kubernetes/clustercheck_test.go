package kubernetes

import (
	"context"
	"slices"
	"testing"

	"github.com/sandboxipam/sandboxipam/cluster/clustercheck"
	"github.com/sandboxipam/sandboxipam/cluster/clustercheck/kubesnap"
	"github.com/sandboxipam/sandboxipam/internal/clusterfixture"
)

// clusterEnv is client-go's view of the cluster's API server, for the
// cluster-wide check (`ipamctl check --cluster` runs kubesnap.Check) and
// the fixture that makes a pod by hand.
func (c *cluster) clusterEnv(t *testing.T) *clusterfixture.Env {
	t.Helper()
	e, err := clusterfixture.EnvFor(c.cp.APIServer)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// clusterCheck runs the comparison of `ipamctl check --cluster` on the
// cluster.
func (c *cluster) clusterCheck(t *testing.T) kubesnap.Result {
	t.Helper()
	e := c.clusterEnv(t)
	res, err := kubesnap.Check(context.Background(), e.Client, e.Dynamic)
	if err != nil {
		t.Fatalf("ipamctl check --cluster: %v", err)
	}
	return res
}

// checkClusterShowsADuplicate runs the cluster-wide check on the live
// cluster: it must find nothing. Then a pod made by hand, bound to a node
// that does not exist (so no kubelet touches its status), claims the
// address of a live pod: the check must name exactly that address and
// those two pods, and the hand-made pod's address outside its node's
// ranges, and nothing else. With the pod gone, it finds nothing again.
func (c *cluster) checkClusterShowsADuplicate(t *testing.T, state clusterState) {
	t.Helper()
	e := c.clusterEnv(t)
	check := func() kubesnap.Result { return c.clusterCheck(t) }
	if res := check(); len(res.Findings) != 0 || res.Pods < len(state.pods) {
		t.Fatalf("ipamctl check --cluster on the live cluster: %d pods compared, findings %+v; want every pod, none", res.Pods, res.Findings)
	}
	victim := state.pods[state.onNode(c.nodes[0].name)[0]]
	ip := victim.IPs[0]
	e.Pod(t, "default", "by-hand-duplicate", "no-such-node", ip)
	res := check()
	if n := len(res.Findings); n != 2 || res.Count(clustercheck.DuplicateAddress) != 1 || res.Count(clustercheck.PodOutsideNode) != 1 {
		t.Fatalf("check with a hand-made duplicate of %s: %+v; want one duplicate and one address outside its node", ip, res.Findings)
	}
	for _, f := range res.Findings {
		want := []string{"default/by-hand-duplicate", "default/" + victim.Name}
		slices.Sort(want)
		if f.Kind == clustercheck.DuplicateAddress && (f.Address != ip || !slices.Equal(f.Pods, want)) {
			t.Fatalf("duplicate finding %+v; want %s held by default/by-hand-duplicate and default/%s", f, ip, victim.Name)
		}
	}
	c.logf(t, "ipamctl check --cluster: nothing on the live cluster; a hand-made duplicate of %s (pod %s) found: %s", ip, victim.Name, res.Findings[0].Words)
	e.DeletePod(t, "default", "by-hand-duplicate")
	if res := check(); len(res.Findings) != 0 {
		t.Fatalf("check after the hand-made pod went: %+v", res.Findings)
	}
}
