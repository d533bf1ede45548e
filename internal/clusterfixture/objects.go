package clusterfixture

import (
	"context"
	"fmt"
	"net/netip"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/ptr"

	"github.com/sandboxipam/sandboxipam/cluster/api/v1alpha1"
)

// Node creates a Node with podCIDRs and returns it (with its UID).
func (e *Env) Node(t testing.TB, name string, cidrs ...string) *corev1.Node {
	t.Helper()
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.NodeSpec{PodCIDRs: cidrs}}
	if len(cidrs) > 0 {
		n.Spec.PodCIDR = cidrs[0]
	}
	got, err := e.Client.CoreV1().Nodes().Create(context.Background(), n, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create Node %s: %v", name, err)
	}
	return got
}

// DeleteNode deletes a Node.
func (e *Env) DeleteNode(t testing.TB, name string) {
	t.Helper()
	if err := e.Client.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete Node %s: %v", name, err)
	}
}

// Pod creates a pod bound to node and sets its status as a kubelet would:
// phase Running and status.podIPs ips, through the status subresource.
func (e *Env) Pod(t testing.TB, namespace, name, node string, ips ...string) *corev1.Pod {
	t.Helper()
	return e.PodIn(t, namespace, name, node, corev1.PodRunning, false, ips...)
}

// PodIn is Pod with the phase and hostNetwork given.
func (e *Env) PodIn(t testing.TB, namespace, name, node string, phase corev1.PodPhase, hostNetwork bool, ips ...string) *corev1.Pod {
	t.Helper()
	ctx := context.Background()
	e.namespace(t, namespace)
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: corev1.PodSpec{NodeName: node, HostNetwork: hostNetwork, AutomountServiceAccountToken: ptr.To(false),
			Containers: []corev1.Container{{Name: "app", Image: "localhost/pause:test"}}},
	}
	got, err := e.Client.CoreV1().Pods(namespace).Create(ctx, p, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create Pod %s/%s: %v", namespace, name, err)
	}
	got.Status.Phase = phase
	for _, ip := range ips {
		got.Status.PodIPs = append(got.Status.PodIPs, corev1.PodIP{IP: ip})
	}
	if len(ips) > 0 {
		got.Status.PodIP = ips[0]
	}
	if got, err = e.Client.CoreV1().Pods(namespace).UpdateStatus(ctx, got, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("set status.podIPs of Pod %s/%s: %v", namespace, name, err)
	}
	return got
}

// DeletePod deletes a pod at once (grace 0), as the pod garbage collector
// does for a pod of a deleted node.
func (e *Env) DeletePod(t testing.TB, namespace, name string) {
	t.Helper()
	if err := e.Client.CoreV1().Pods(namespace).Delete(context.Background(), name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
		t.Fatalf("delete Pod %s/%s: %v", namespace, name, err)
	}
}

// namespace creates the namespace and its default ServiceAccount, which
// pod admission wants and no controller makes here, unless they exist.
func (e *Env) namespace(t testing.TB, name string) {
	t.Helper()
	ctx := context.Background()
	_, err := e.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("create Namespace %s: %v", name, err)
	}
	_, err = e.Client.CoreV1().ServiceAccounts(name).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("create ServiceAccount %s/default: %v", name, err)
	}
}

// RenewLease creates or renews node's Lease in kube-node-lease, renewed
// at at, as the node's kubelet does.
func (e *Env) RenewLease(t testing.TB, node string, at time.Time) *coordinationv1.Lease {
	t.Helper()
	ctx := context.Background()
	leases := e.Client.CoordinationV1().Leases(corev1.NamespaceNodeLease)
	renew := metav1.NewMicroTime(at)
	l, err := leases.Get(ctx, node, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		l = &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: node, Namespace: corev1.NamespaceNodeLease},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(node), LeaseDurationSeconds: ptr.To[int32](40), RenewTime: &renew}}
		if l, err = leases.Create(ctx, l, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create Lease %s: %v", node, err)
		}
		return l
	}
	if err != nil {
		t.Fatalf("get Lease %s: %v", node, err)
	}
	l.Spec.RenewTime = &renew
	if l, err = leases.Update(ctx, l, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("renew Lease %s: %v", node, err)
	}
	return l
}

// Pool creates an IPPool of IPv4 cidrs, blocks of size bits; it fails t
// on error.
func (e *Env) Pool(t testing.TB, name string, size int, cidrs ...string) {
	t.Helper()
	if err := CreatePool(context.Background(), e.Dynamic, name, size, 0, cidrs...); err != nil {
		t.Fatal(err)
	}
}

// CreatePool creates an IPPool of the given CIDRs (IPv4 and IPv6 sorted by
// family) with blocks of v4bits and v6bits. It returns its error, so
// simulated nodes can call it off the test goroutine.
func CreatePool(ctx context.Context, dyn dynamic.Interface, name string, v4bits, v6bits int, cidrs ...string) error {
	p := v1alpha1.IPPool{TypeMeta: metav1.TypeMeta{APIVersion: v1alpha1.Group + "/" + v1alpha1.Version, Kind: v1alpha1.IPPoolKind},
		ObjectMeta: metav1.ObjectMeta{Name: name}}
	for _, c := range cidrs {
		if netip.MustParsePrefix(c).Addr().Is4() {
			if p.Spec.IPv4 == nil {
				p.Spec.IPv4 = &v1alpha1.PoolFamily{BlockSize: v4bits}
			}
			p.Spec.IPv4.CIDRs = append(p.Spec.IPv4.CIDRs, c)
		} else {
			if p.Spec.IPv6 == nil {
				p.Spec.IPv6 = &v1alpha1.PoolFamily{BlockSize: v6bits}
			}
			p.Spec.IPv6.CIDRs = append(p.Spec.IPv6.CIDRs, c)
		}
	}
	u, err := v1alpha1.ToUnstructured(&p)
	if err != nil {
		return err
	}
	if _, err := dyn.Resource(v1alpha1.IPPoolResource).Create(ctx, u, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create IPPool %s: %w", name, err)
	}
	return nil
}

// Block claims block cidr of pool for node, as ipamd's pool source does,
// and returns the created object.
func (e *Env) Block(t testing.TB, pool, cidr, node string, uid types.UID) v1alpha1.IPBlock {
	t.Helper()
	b := v1alpha1.NewBlock(pool, netip.MustParsePrefix(cidr), node, string(uid), metav1.Now())
	u, err := v1alpha1.ToUnstructured(&b)
	if err != nil {
		t.Fatal(err)
	}
	got, err := e.Dynamic.Resource(v1alpha1.IPBlockResource).Create(context.Background(), u, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create IPBlock %s: %v", b.Name, err)
	}
	if b, err = v1alpha1.BlockFrom(got); err != nil {
		t.Fatal(err)
	}
	return b
}
