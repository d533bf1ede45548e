// Package pooltest helps tests of the cluster pool (ipSource.type pool)
// against a real kube-apiserver: it installs the project's own CRDs from
// deploy/kubernetes/crds/pool.yaml, exactly as shipped, waits until the
// API server serves them, and creates IPPools and Nodes.
package pooltest

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/sandboxipam/sandboxipam/internal/kubeenv"
	"github.com/sandboxipam/sandboxipam/internal/testsupport"
	"github.com/sandboxipam/sandboxipam/ipamd/kubeclient"

	"github.com/sandboxipam/sandboxipam/ipamd/api/pool/v1alpha1"
)

// CRDFile is the CRDs' path from the module root.
const CRDFile = "deploy/kubernetes/crds/pool.yaml"

var crdResource = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// InstallCRDs creates every CRD of root/CRDFile and waits until each is
// Established and its resource answers a list.
func InstallCRDs(ctx context.Context, dyn dynamic.Interface, root string) error {
	data, err := os.ReadFile(filepath.Join(root, CRDFile))
	if err != nil {
		return err
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		var u unstructured.Unstructured
		if err := dec.Decode(&u.Object); err != nil {
			if err.Error() == "EOF" {
				break
			}
			return fmt.Errorf("%s: %w", CRDFile, err)
		}
		if len(u.Object) == 0 {
			continue
		}
		if _, err := dyn.Resource(crdResource).Create(ctx, &u, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create CRD %s: %w", u.GetName(), err)
		}
	}
	for _, gvr := range []schema.GroupVersionResource{v1alpha1.IPPoolResource, v1alpha1.IPBlockResource} {
		if err := waitServed(ctx, dyn, gvr); err != nil {
			return err
		}
	}
	return nil
}

func waitServed(ctx context.Context, dyn dynamic.Interface, gvr schema.GroupVersionResource) error {
	var err error
	for range 300 {
		if _, err = dyn.Resource(gvr).List(ctx, metav1.ListOptions{}); err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	return fmt.Errorf("%s not served after 30s: %w", gvr.Resource, err)
}

// CreatePool creates an IPPool of the given CIDRs (IPv4 and IPv6 sorted by
// family) with blocks of v4bits and v6bits.
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

// CreateNode registers a Node (no podCIDRs: the pool source needs none)
// and returns its UID.
func CreateNode(ctx context.Context, cs kubernetes.Interface, name string) (string, error) {
	n, err := cs.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
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

// Start runs etcd and kube-apiserver for the test with the pool's CRDs
// installed, or skips (fails under CI=true) when tools/kubernetes/build.sh
// has not built them. The client counts its requests.
func Start(t testing.TB) (*kubeenv.APIServer, *kubeclient.Client) {
	t.Helper()
	if os.Geteuid() != 0 {
		testsupport.SkipOrFail(t, "the API server test runs etcd and kube-apiserver as root")
	}
	bins := kubeenv.BinariesIn(kubeenv.CacheDir())
	if err := bins.Missing(); err != nil {
		testsupport.SkipOrFail(t, "%v: run tools/kubernetes/build.sh (make kubernetes-tools) first", err)
	}
	ctx := context.Background()
	a, err := kubeenv.StartAPIServer(ctx, kubeenv.Options{Binaries: bins, Dir: t.TempDir(), Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.Stop)
	if err := a.Ready(ctx); err != nil {
		t.Fatal(err)
	}
	rc, err := clientcmd.BuildConfigFromFlags("", a.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	rc.QPS, rc.Burst = 1000, 1000 // the test's own set-up (Nodes, IPPools) is not what is measured
	kc, err := kubeclient.FromConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	if err := InstallCRDs(ctx, kc.Dynamic, testsupport.Root(t)); err != nil {
		t.Fatal(err)
	}
	return a, kc
}

// Client is a new counted client of a's, on a connection of its own (as
// every node's ipamd has).
func Client(a *kubeenv.APIServer) (*kubeclient.Client, error) {
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
