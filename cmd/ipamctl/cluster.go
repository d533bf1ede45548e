package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/sandboxipam/sandboxipam/cluster/clustercheck"
	"github.com/sandboxipam/sandboxipam/cluster/clustercheck/kubesnap"
)

// errClusterFindings: ipamctl check --cluster found something (exit 1).
var errClusterFindings = errors.New("findings in the cluster")

// userAgent is what ipamctl calls itself to the API server.
const userAgent = "sandboxipam-ipamctl"

// checkCluster reads the cluster through the Kubernetes API and compares
// it. Its only "could not look" case, the pool's resources not installed,
// is a cluster on the node source, which has nothing of them to compare: a
// note says so. Any list that fails is an error (exit 1), never a pass.
func (a *app) checkCluster(ctx context.Context, kubeconfig string) error {
	cs, dyn, err := kubeClients(kubeconfig)
	if err != nil {
		return err
	}
	v, err := kubesnap.Check(ctx, cs, dyn)
	if err != nil {
		return err
	}
	if err := a.print(v, func() error { return renderClusterCheck(a.stdout, v) }); err != nil {
		return err
	}
	if n := len(v.Findings); n > 0 {
		return fmt.Errorf("%w: %d, %d of them duplicate addresses", errClusterFindings, n, v.Count(clustercheck.DuplicateAddress))
	}
	return nil
}

// renderClusterCheck prints each finding in words, then what was
// compared. It lives here, where ipamctl runs the check, so that the
// introspection client, which the node side links, never links client-go.
func renderClusterCheck(w io.Writer, r kubesnap.Result) error {
	for _, f := range r.Findings {
		if _, err := fmt.Fprintf(w, "%-20s %s\n", f.Kind, f.Words); err != nil {
			return err
		}
	}
	verdict := "the cluster's pools, blocks, nodes and pods agree"
	if n := len(r.Findings); n > 0 {
		verdict = fmt.Sprintf("%d finding(s)", n)
	}
	if _, err := fmt.Fprintf(w, "%s: %d pool(s), %d block(s), %d node(s), %d pod(s) holding %d address(es) compared\n",
		verdict, r.Pools, r.Blocks, r.Nodes, r.Pods, r.Addresses); err != nil {
		return err
	}
	for _, n := range r.Notes {
		if _, err := fmt.Fprintf(w, "note: %s\n", n); err != nil {
			return err
		}
	}
	return nil
}

// kubeClients are the typed and dynamic clients of kubeconfig (see
// restConfig).
func kubeClients(kubeconfig string) (kubernetes.Interface, dynamic.Interface, error) {
	cfg, err := restConfig(kubeconfig)
	if err != nil {
		return nil, nil, err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("kubernetes client: %w", err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("kubernetes dynamic client: %w", err)
	}
	return cs, dyn, nil
}

// restConfig is the flag's kubeconfig, else $KUBECONFIG's, else the pod's
// service account.
func restConfig(kubeconfig string) (*rest.Config, error) {
	if kubeconfig == "" {
		kubeconfig = os.Getenv("KUBECONFIG")
	}
	var cfg *rest.Config
	var err error
	if kubeconfig == "" {
		if cfg, err = rest.InClusterConfig(); err != nil {
			return nil, fmt.Errorf("no --kubeconfig, no $KUBECONFIG, and not in a pod: %w", err)
		}
	} else if cfg, err = clientcmd.BuildConfigFromFlags("", kubeconfig); err != nil {
		return nil, fmt.Errorf("--kubeconfig %s: %w", kubeconfig, err)
	}
	cfg.UserAgent = userAgent
	return cfg, nil
}
