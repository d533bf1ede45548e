package kubernetes

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/sandboxipam/sandboxipam/cluster/reclaim"
	deploy "github.com/sandboxipam/sandboxipam/deploy/kubernetes"
	"github.com/sandboxipam/sandboxipam/internal/testsupport"
)

// The reclaimer as the pool test runs it: the shortest grace it accepts,
// a pass every 2 s.
const (
	reclaimerGrace         = reclaim.MinGrace
	reclaimerInterval      = 2 * time.Second
	reclaimerLease         = "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/" + deploy.ReclaimerName
	reclaimerDecisionsPort = "61681"
	reclaimerDecisions     = "127.0.0.1:" + reclaimerDecisionsPort // its --decisions-address, on its node's loopback (hostNetwork)
)

// configureReclaimer sets the rendered reclaimer's image to the one the
// nodes imported and gives it the test's timings through its flags.
func configureReclaimer(r deploy.Rendered) {
	spec := &r.Reclaimer.Deployment.Spec.Template.Spec
	for i := range spec.Containers {
		spec.Containers[i].Image = e2eImageRef
		spec.Containers[i].Args = append(spec.Containers[i].Args,
			"--grace="+reclaimerGrace.String(), "--interval="+reclaimerInterval.String(), "--check-interval=10s")
	}
}

// waitReclaimerLeader waits until a running reclaimer replica holds the
// leader Lease, and returns its pod.
func (c *cluster) waitReclaimerLeader(t *testing.T) corev1.Pod {
	t.Helper()
	var leader corev1.Pod
	testsupport.WaitFor(t, 3*time.Minute, "a reclaimer replica leads", func(ctx context.Context) error {
		var err error
		leader, err = c.reclaimerLeader(ctx)
		return err
	})
	c.logf(t, "reclaimer %s on %s holds the Lease kube-system/%s", leader.Name, leader.Spec.NodeName, deploy.ReclaimerName)
	return leader
}

// reclaimerLeader is the running reclaimer pod the leader Lease names.
func (c *cluster) reclaimerLeader(ctx context.Context) (corev1.Pod, error) {
	var lease coordinationv1.Lease
	if err := c.api.get(ctx, reclaimerLease, &lease); err != nil {
		return corev1.Pod{}, err
	}
	if lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity == "" {
		return corev1.Pod{}, errors.New("the leader Lease has no holder")
	}
	var pods corev1.PodList
	sel := url.QueryEscape("app.kubernetes.io/name=" + deploy.ReclaimerName)
	if err := c.api.get(ctx, "/api/v1/namespaces/kube-system/pods?labelSelector="+sel, &pods); err != nil {
		return corev1.Pod{}, err
	}
	for _, p := range pods.Items {
		if p.Name == *lease.Spec.HolderIdentity && p.Status.Phase == corev1.PodRunning {
			return p, nil
		}
	}
	return corev1.Pod{}, fmt.Errorf("the Lease names %s, not a running reclaimer pod", *lease.Spec.HolderIdentity)
}

// reclaimerDecisions reads the leading reclaimer's last pass, as an
// operator on its node would: GET /v1/decisions on the node's loopback
// (the reclaimer is hostNetwork).
func (c *cluster) reclaimerDecisions(ctx context.Context) (reclaim.Decisions, error) {
	leader, err := c.reclaimerLeader(ctx)
	if err != nil {
		return reclaim.Decisions{}, err
	}
	n := c.node(leader.Spec.NodeName)
	if n == nil {
		return reclaim.Decisions{}, fmt.Errorf("the leader %s runs on %q, not a node of the cluster", leader.Name, leader.Spec.NodeName)
	}
	return getDecisions(ctx, netnsDialer(n.netns), reclaimerDecisions, n.name+"'s loopback", leader.Name)
}

// getDecisions GETs /v1/decisions from addr, dialled with dial, and
// returns the pass of the reclaimer named leader; where names the route
// in errors.
func getDecisions(ctx context.Context, dial func(ctx context.Context, network, addr string) (net.Conn, error), addr, where, leader string) (reclaim.Decisions, error) {
	var d reclaim.Decisions
	hc := &http.Client{Transport: &http.Transport{DialContext: dial, DisableKeepAlives: true}, Timeout: 10 * time.Second}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+reclaim.PathDecisions, nil)
	if err != nil {
		return d, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return d, fmt.Errorf("GET %s through %s: %w", reclaim.PathDecisions, where, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return d, err
	}
	if resp.StatusCode != http.StatusOK {
		return d, fmt.Errorf("GET %s through %s: %s: %s", reclaim.PathDecisions, where, resp.Status, body)
	}
	if err := json.Unmarshal(body, &d); err != nil {
		return d, fmt.Errorf("GET %s through %s: %w", reclaim.PathDecisions, where, err)
	}
	if d.Identity != leader || d.Pass == nil {
		return d, fmt.Errorf("the reclaimer %q through %s has no pass yet (the Lease names %s)", d.Identity, where, leader)
	}
	return d, nil
}

// node is the cluster's node of that name, nil when there is none.
func (c *cluster) node(name string) *clusterNode {
	for _, n := range c.nodes {
		if n.name == name {
			return n
		}
	}
	return nil
}
