// Package clusterfixture gives the cluster tests a real kube-apiserver
// (internal/kubeenv) with the pool's CRDs installed from
// deploy/kubernetes/crds/pool.yaml, the very file operators apply, and
// creates the objects the tests judge: Nodes, Pods whose status.podIPs
// are set through the status subresource as a kubelet sets them, node
// Leases, IPPools and IPBlocks. It is the one owner of starting an API
// server for a test and of installing the CRDs, and hands out the pool
// source's counted clients (counted.go). Package kubeenv below it only
// starts the control plane's processes. Every helper that takes a
// testing.TB fails the test on error.
package clusterfixture

import (
	"context"
	"fmt"
	"testing"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/sandboxipam/sandboxipam/internal/kubeenv"
	"github.com/sandboxipam/sandboxipam/internal/testsupport"
)

// Env is a running API server and clients of it.
type Env struct {
	API     *kubeenv.APIServer
	Config  *rest.Config
	Client  kubernetes.Interface
	Dynamic dynamic.Interface
}

// Require returns the Kubernetes binaries tools/kubernetes/build.sh
// built, or skips t (fails it under CI=true) when this machine cannot run
// them: etcd and kube-apiserver run as root.
func Require(t testing.TB) kubeenv.Binaries {
	t.Helper()
	testsupport.RequireRoot(t)
	bins := kubeenv.BinariesIn(kubeenv.CacheDir())
	if err := bins.Missing(); err != nil {
		testsupport.SkipOrFail(t, "%v", err)
	}
	return bins
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
	opts.Binaries, opts.Logf = Require(t), t.Logf
	a, err := kubeenv.StartAPIServer(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	e, err := EnvFor(a)
	if err != nil {
		a.Stop()
		t.Fatal(err)
	}
	return e
}

// RESTConfig is client-go's config for a: its URL, token and CA, dialled
// from inside a's network namespace when it has one. Package kubeenv
// links no client-go, so this is where the config is built.
func RESTConfig(a *kubeenv.APIServer) *rest.Config {
	return &rest.Config{Host: a.URL, BearerToken: a.Token, TLSClientConfig: rest.TLSClientConfig{CAData: a.CAPEM},
		Dial: kubeenv.NetNSDialer(a.NetNS), QPS: 200, Burst: 400}
}

// EnvFor gives the clients of an API server already running: one a test
// started through kubeenv beside a controller manager and a scheduler,
// say. It installs nothing.
func EnvFor(a *kubeenv.APIServer) (*Env, error) {
	cfg := RESTConfig(a)
	e := &Env{API: a, Config: cfg}
	var err error
	if e.Client, err = kubernetes.NewForConfig(cfg); err != nil {
		return nil, fmt.Errorf("typed client of %s: %w", a.URL, err)
	}
	if e.Dynamic, err = dynamic.NewForConfig(cfg); err != nil {
		return nil, fmt.Errorf("dynamic client of %s: %w", a.URL, err)
	}
	return e, nil
}
