package kubernetes

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/sandboxipam/sandboxipam/internal/testsupport"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stypes "k8s.io/apimachinery/pkg/types"
)

// clusterWebReplicas is the Deployment's size on three nodes.
const clusterWebReplicas = 30

const dsPath = "/apis/apps/v1/namespaces/kube-system/daemonsets/sandboxipam"

// TestThreeNodeCluster brings up a cluster of three nodes on this machine
// (each its own network and mount namespaces, containerd and kubelet;
// kube-controller-manager assigning dual-stack podCIDRs), applies the
// containerd overlay with the routes component as "kubectl apply -k"
// would, and checks, against the API server, every node's ipamctl and
// every node's runtime, with exact addresses: a spread Deployment, TCP
// between nodes, ipamd killed and its state lost, a Node deleted and
// registered again, a rolled DaemonSet, and a scale to zero.
func TestThreeNodeCluster(t *testing.T) {
	c := startCluster(t)
	ctx := context.Background()
	// The workloads go before kubelets and the control plane stop
	// (cleanups run last-in first-out), so every ipamd sees its DELs.
	t.Cleanup(func() { c.removeWorkloads(t) })
	c.installDaemonSet(t)

	if err := c.api.create(ctx, "/apis/apps/v1/namespaces/default/deployments", spreadDeployment(clusterWebReplicas, "")); err != nil {
		t.Fatal(err)
	}
	state := c.waitAgree(t, clusterWebReplicas, inNodeCIDRs)
	for _, n := range c.nodes {
		if got := len(state.onNode(n.name)); got != clusterWebReplicas/clusterNodes {
			t.Fatalf("%s runs %d pods, want %d (topology spread)", n.name, got, clusterWebReplicas/clusterNodes)
		}
	}
	c.logf(t, "%d pods spread over %d nodes, every address in its node's podCIDRs, none twice", clusterWebReplicas, clusterNodes)
	c.checkRoutes(t, state)

	first, third := state.pods[state.onNode(c.nodes[0].name)[0]], state.pods[state.onNode(c.nodes[2].name)[0]]
	tcpBetween(t, first, third)
	c.logf(t, "TCP between %s and %s both ways, both families", first.Node, third.Node)

	state = c.ipamdLosesItself(t, state)
	state = c.reregisterNode(t, state)
	c.rollDaemonSet(t, state)
	c.scaleToZero(t)
	c.removeWorkloads(t)
	for _, n := range c.nodes {
		if _, err := os.Stat(filepath.Join(n.private("/etc/cni/net.d"), ipamdConfList)); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("%s: the conflist outlived the DaemonSet (%s): %v", n.name, conflistRace, err)
		}
	}
	c.logf(t, "three-node test done")
}

// spreadDeployment is webDeployment spread evenly over the nodes, or
// pinned to node when it is not "".
func spreadDeployment(n int32, node string) *appsv1.Deployment {
	d := webDeployment(n)
	spec := &d.Spec.Template.Spec
	spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{
		MaxSkew: 1, TopologyKey: "kubernetes.io/hostname", WhenUnsatisfiable: corev1.DoNotSchedule,
		LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": webName}},
	}}
	if node != "" {
		spec.TopologySpreadConstraints = nil
		spec.NodeSelector = map[string]string{"kubernetes.io/hostname": node}
	}
	return d
}

// installDaemonSet applies the rendered manifests and waits until ipamd
// is ready on every node, has written its conflist and installed the
// image's plugin.
func (c *cluster) installDaemonSet(t *testing.T) { c.installDaemonSetWith(t, ipamdConfList, nil) }

// ipamdConfList is the conflist ipamd writes as rendered.
const ipamdConfList = "10-sandboxipam.conflist"

// installDaemonSetWith is installDaemonSet with edit applied to the
// rendered DaemonSet (renderClusterManifestsWith; nil: as rendered),
// waiting for confList in every node's /etc/cni/net.d: ipamd's, or, where
// edit makes ipamd write none (IPAM only), the operator's.
func (c *cluster) installDaemonSetWith(t *testing.T, confList string, edit func(*appsv1.DaemonSet)) {
	t.Helper()
	ctx := context.Background()
	for _, o := range renderClusterManifestsWith(t, edit) {
		if err := c.api.create(ctx, o.path, o.obj); err != nil {
			t.Fatal(err)
		}
	}
	c.waitDaemonSet(t, nil)
	for _, n := range c.nodes {
		if _, err := os.Stat(filepath.Join(n.private("/etc/cni/net.d"), confList)); err != nil {
			t.Fatalf("%s: ipamd is ready but the node has no conflist %s: %v", n.name, confList, err)
		}
		installed, err := os.ReadFile(filepath.Join(n.private("/opt/cni/bin"), "sandboxipam"))
		if err != nil {
			t.Fatalf("%s: the init container did not install the plugin: %v", n.name, err)
		}
		if !bytes.Equal(installed, c.plugin) {
			t.Fatalf("%s: installed plugin (%d bytes) differs from the image's (%d bytes)", n.name, len(installed), len(c.plugin))
		}
	}
	c.waitNodesReady(t)
	c.logf(t, "DaemonSet ready on %d nodes, every node Ready", clusterNodes)
}

// waitNodesReady waits until every node is Ready: kubelet finds the
// conflist ipamd wrote.
func (c *cluster) waitNodesReady(t *testing.T) {
	t.Helper()
	testsupport.WaitFor(t, 2*time.Minute, "every node is Ready", func(ctx context.Context) error {
		for _, n := range c.nodes {
			info, err := c.getNode(ctx, n.name)
			if err != nil {
				return err
			}
			if !info.Ready {
				return fmt.Errorf("%s not Ready", n.name)
			}
		}
		return nil
	})
}

// waitDaemonSet waits until the DaemonSet has rolled out to every live
// node: one ready pod per node, none of them one of old (by UID). It
// returns the pods by node and follows each ipamd container's log.
func (c *cluster) waitDaemonSet(t *testing.T, old []k8stypes.UID) map[string]corev1.Pod {
	t.Helper()
	byNode := map[string]corev1.Pod{}
	testsupport.WaitFor(t, 5*time.Minute, "the DaemonSet is ready on every node", func(ctx context.Context) error {
		var ds appsv1.DaemonSet
		if err := c.api.get(ctx, dsPath, &ds); err != nil {
			return err
		}
		live := c.live()
		st, n := ds.Status, int32(len(live))
		if st.ObservedGeneration < ds.Generation || st.DesiredNumberScheduled != n || st.UpdatedNumberScheduled != n ||
			st.NumberReady != n || st.NumberAvailable != n {
			return fmt.Errorf("status %+v", st)
		}
		pods, err := c.ipamdPods(ctx)
		if err != nil {
			return err
		}
		// A down node's pod stays in the API (its kubelet is stopped and
		// the pod garbage collector off).
		pods = slices.DeleteFunc(pods, func(p corev1.Pod) bool { return c.down[p.Spec.NodeName] })
		clear(byNode)
		for _, p := range pods {
			if slices.Contains(old, p.UID) || p.DeletionTimestamp != nil || !podReady(&p) {
				return fmt.Errorf("pod %s (%s) on %s not a new ready one", p.Name, p.UID, p.Spec.NodeName)
			}
			byNode[p.Spec.NodeName] = p
		}
		if len(byNode) != len(live) || len(pods) != len(live) {
			return fmt.Errorf("%d ipamd pods on %d nodes", len(pods), len(byNode))
		}
		return nil
	})
	for _, n := range c.live() {
		c.followIPAMD(t, n)
	}
	return byNode
}

func (c *cluster) ipamdPods(ctx context.Context) ([]corev1.Pod, error) {
	var list corev1.PodList
	err := c.api.get(ctx, "/api/v1/namespaces/kube-system/pods?labelSelector=app.kubernetes.io%2Fname%3Dsandboxipam", &list)
	return list.Items, err
}

// followIPAMD keeps node n's running ipamd container's log.
func (c *cluster) followIPAMD(t *testing.T, n *clusterNode) {
	t.Helper()
	id, _, err := n.cri.runningContainer(context.Background(), "ipamd")
	if err != nil {
		t.Fatal(err)
	}
	followLogs(t, n.cri, id, n.dir)
}

// ipamdReady reports node n's ipamd /readyz (on the node's loopback).
func (n *clusterNode) ipamdReady(ctx context.Context) (bool, error) {
	code, _, err := httpInNetNS(ctx, n.netns, "http://127.0.0.1:61679/readyz")
	if err != nil {
		return false, err
	}
	return code == http.StatusOK, nil
}

// killIPAMD SIGKILLs node n's running ipamd and returns its container ID.
func (n *clusterNode) killIPAMD(t *testing.T) string {
	t.Helper()
	id, pid, err := n.cri.runningContainer(context.Background(), "ipamd")
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatalf("kill ipamd (pid %d) on %s: %v", pid, n.name, err)
	}
	return id
}

// waitNewIPAMD waits until node n runs an ipamd container other than old.
func (c *cluster) waitNewIPAMD(t *testing.T, n *clusterNode, old string) {
	t.Helper()
	testsupport.WaitFor(t, 3*time.Minute, n.name+" runs a new ipamd", func(ctx context.Context) error {
		id, _, err := n.cri.runningContainer(ctx, "ipamd")
		if err != nil {
			return err
		}
		if id == old {
			return errors.New("the killed ipamd container still runs")
		}
		return nil
	})
	c.followIPAMD(t, n)
}
