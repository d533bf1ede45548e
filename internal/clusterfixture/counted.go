// Counted clients for the pool source's tests: the clients it uses
// (ipamd/kubeclient), one connection per simulated node, and Nodes and
// IPBlocks with errors returned, so concurrent nodes can call them off the
// test goroutine.
package clusterfixture

import (
	"context"
	"fmt"
	"net"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/sandboxipam/sandboxipam/cluster/api/v1alpha1"
	"github.com/sandboxipam/sandboxipam/internal/kubeenv"
	"github.com/sandboxipam/sandboxipam/ipamd/kubeclient"
)

// CreateNode registers a Node (no podCIDRs: the pool source needs none),
// with internalIPs as its InternalIP addresses as kubelet registers them,
// and returns its UID.
func CreateNode(ctx context.Context, cs kubernetes.Interface, name string, internalIPs ...string) (string, error) {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
	for _, ip := range internalIPs {
		node.Status.Addresses = append(node.Status.Addresses, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: ip})
	}
	n, err := cs.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("create Node %s: %w", name, err)
	}
	return string(n.UID), nil
}

// Blocks lists every IPBlock as "cidr node" lines' parts: CIDR → node name.
func Blocks(ctx context.Context, dyn dynamic.Interface) (map[string]v1alpha1.IPBlock, error) {
	l, err := dyn.Resource(v1alpha1.IPBlockResource).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	out := map[string]v1alpha1.IPBlock{}
	for i := range l.Items {
		b, err := v1alpha1.BlockFrom(&l.Items[i])
		if err != nil {
			return nil, err
		}
		out[b.Spec.CIDR] = b
	}
	return out, nil
}

// StartCounted runs etcd and kube-apiserver for the test with the pool's
// CRDs installed, or skips (fails under CI=true) when this machine cannot,
// and returns the counted client (ipamd/kubeclient) the pool source uses.
// The API server stops when the test ends.
func StartCounted(t testing.TB) (*kubeenv.APIServer, *kubeclient.Client) {
	t.Helper()
	e := Start(t, t.TempDir())
	t.Cleanup(e.API.Stop)
	rc := rest.CopyConfig(e.Config)
	rc.QPS, rc.Burst = 1000, 1000 // the test's own set-up (Nodes, IPPools) is not what is measured
	kc, err := kubeclient.FromConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	e.InstallPoolCRDs(t)
	return e.API, kc
}

// CountedClient is a new counted client of a's, on a connection of its own (as
// every node's ipamd has).
func CountedClient(a *kubeenv.APIServer) (*kubeclient.Client, error) {
	rc, err := clientcmd.BuildConfigFromFlags("", a.Kubeconfig)
	if err != nil {
		return nil, err
	}
	// A Dial of its own keeps client-go from sharing one cached
	// transport (and one HTTP/2 connection) among all simulated nodes.
	d := &net.Dialer{Timeout: 10 * time.Second}
	rc.Dial = d.DialContext
	return kubeclient.FromConfig(rc)
}
