// Package clusterfixture gives the cluster-pool tests a real
// kube-apiserver (internal/kubeenv) with the pool's CRDs installed from
// deploy/kubernetes/crds/pool.yaml, the very file operators apply, and
// creates the objects the tests judge: Nodes, Pods whose status.podIPs
// are set through the status subresource as a kubelet sets them, node
// Leases, IPPools and IPBlocks. Every helper fails the test on error.
package clusterfixture

import (
	"bytes"
	"context"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/sandboxipam/sandboxipam/internal/kubeenv"
	"github.com/sandboxipam/sandboxipam/internal/testsupport"
	"github.com/sandboxipam/sandboxipam/ipamd/api/pool/v1alpha1"
)

// Env is a running API server and clients of it.
type Env struct {
	API     *kubeenv.APIServer
	Config  *rest.Config
	Client  kubernetes.Interface
	Dynamic dynamic.Interface
}

// Start runs etcd and kube-apiserver under dir, or skips t (fails under
// CI=true) when this machine cannot. The caller stops Env.API.
func Start(t testing.TB, dir string) *Env {
	t.Helper()
	return StartWith(t, kubeenv.Options{Dir: dir})
}

// StartWith is Start with options (Authorization: "RBAC", say); Binaries
// and Logf are filled in.
func StartWith(t testing.TB, opts kubeenv.Options) *Env {
	t.Helper()
	if os.Geteuid() != 0 {
		testsupport.SkipOrFail(t, "the API server test runs etcd and kube-apiserver as root")
	}
	bins := kubeenv.BinariesIn(kubeenv.CacheDir())
	if err := bins.Missing(); err != nil {
		testsupport.SkipOrFail(t, "%v: run tools/kubernetes/build.sh (make kubernetes-tools) first", err)
	}
	opts.Binaries, opts.Logf = bins, t.Logf
	a, err := kubeenv.StartAPIServer(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	cfg := &rest.Config{Host: a.URL, BearerToken: a.Token, TLSClientConfig: rest.TLSClientConfig{CAData: a.CAPEM},
		Dial: kubeenv.NetNSDialer(a.NetNS), QPS: 200, Burst: 400}
	e := &Env{API: a, Config: cfg}
	if e.Client, err = kubernetes.NewForConfig(cfg); err != nil {
		a.Stop()
		t.Fatal(err)
	}
	if e.Dynamic, err = dynamic.NewForConfig(cfg); err != nil {
		a.Stop()
		t.Fatal(err)
	}
	return e
}

var crdResource = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// InstallPoolCRDs creates the CRDs of deploy/kubernetes/crds/pool.yaml and
// waits until the API server serves them.
func (e *Env) InstallPoolCRDs(t testing.TB) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(testsupport.Root(t), "deploy", "kubernetes", "crds", "pool.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var names []string
	for _, doc := range bytes.Split(data, []byte("\n---\n")) {
		var obj map[string]any
		if err := yaml.Unmarshal(doc, &obj); err != nil {
			t.Fatalf("pool.yaml: %v", err)
		}
		u := &unstructured.Unstructured{Object: obj}
		if _, err := e.Dynamic.Resource(crdResource).Create(ctx, u, metav1.CreateOptions{FieldValidation: "Strict"}); err != nil {
			t.Fatalf("the API server refuses CRD %s of deploy/kubernetes/crds/pool.yaml: %v", u.GetName(), err)
		}
		names = append(names, u.GetName())
	}
	for _, name := range names {
		testsupport.Wait(t, "CRD "+name+" Established", func() (bool, string) {
			u, err := e.Dynamic.Resource(crdResource).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
			for _, c := range conds {
				m, _ := c.(map[string]any)
				if m["type"] == "Established" && m["status"] == "True" {
					return true, ""
				}
			}
			return false, fmt.Sprint(conds)
		})
	}
	// Established means the discovery document has the resource; a list
	// proves the storage serves it.
	for _, r := range []schema.GroupVersionResource{v1alpha1.IPPoolResource, v1alpha1.IPBlockResource} {
		testsupport.Wait(t, "the API server to serve "+r.Resource, func() (bool, string) {
			_, err := e.Dynamic.Resource(r).List(ctx, metav1.ListOptions{})
			return err == nil, fmt.Sprint(err)
		})
	}
}

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

// Pool creates an IPPool of IPv4 cidrs, blocks of size bits.
func (e *Env) Pool(t testing.TB, name string, size int, cidrs ...string) {
	t.Helper()
	u, err := v1alpha1.ToUnstructured(&v1alpha1.IPPool{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.Group + "/" + v1alpha1.Version, Kind: v1alpha1.IPPoolKind},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       v1alpha1.IPPoolSpec{IPv4: &v1alpha1.PoolFamily{CIDRs: cidrs, BlockSize: size}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Dynamic.Resource(v1alpha1.IPPoolResource).Create(context.Background(), u, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create IPPool %s: %v", name, err)
	}
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
