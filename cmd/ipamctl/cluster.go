package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/sandboxipam/sandboxipam/cluster/clustercheck/kubesnap"
)

// errClusterFindings: ipamctl check --cluster found something (exit 1).
var errClusterFindings = errors.New("findings in the cluster")

// userAgent is what ipamctl calls itself to the API server.
const userAgent = "sandboxipam-ipamctl"

// nodeReadTimeout bounds the read of one node's ipamd (pods/exec).
const nodeReadTimeout = 15 * time.Second

// checkCluster reads the cluster through the Kubernetes API and compares
// it; with fromNodes it also asks every node's ipamd, through pods/exec,
// what it holds. Its "could not look" cases: the pool's resources not
// installed (a cluster on the node source, which has nothing of them to
// compare: a note says so), and a node whose ipamd could not be read
// (NOT COMPARED, exit 3 unless a finding makes it 1). Any list that fails
// is an error (exit 1), never a pass.
func (a *app) checkCluster(ctx context.Context, kubeconfig string, fromNodes bool) error {
	cfg, err := restConfig(kubeconfig)
	if err != nil {
		return err
	}
	cs, dyn, err := clientsFor(cfg)
	if err != nil {
		return err
	}
	var v kubesnap.Result
	if fromNodes {
		v, err = kubesnap.CheckNodes(ctx, cs, dyn, kubesnap.NodeReads{Exec: kubesnap.RemoteExec(cfg, cs), Timeout: nodeReadTimeout})
	} else {
		v, err = kubesnap.Check(ctx, cs, dyn)
		v.Notes = append(v.Notes, "what each node's ipamd holds was not asked (--from-nodes=false): an address a node still gives out "+
			"to a pod the API no longer shows is not seen")
	}
	if err != nil {
		return err
	}
	if err := a.print(v, func() error { return renderClusterCheck(a.stdout, v) }); err != nil {
		return err
	}
	if n := len(v.Findings); n > 0 {
		return fmt.Errorf("%w: %d, %d of them duplicate addresses", errClusterFindings, n, v.Duplicates())
	}
	if n := len(v.NotCompared); n > 0 {
		return fmt.Errorf("%w: no finding in what was compared, but the ipamd of %d node(s) not compared", errNotCompared, n)
	}
	return nil
}

// renderClusterCheck prints first the nodes not compared (a check that
// could not look says so before anything that reads like a pass), then
// each finding in words, then what was compared. It lives here, where
// ipamctl runs the check, so that the introspection client, which the
// node side links, never links client-go.
func renderClusterCheck(w io.Writer, r kubesnap.Result) error {
	for _, nc := range r.NotCompared {
		if _, err := fmt.Fprintf(w, "NOT COMPARED: node %s: %s\n", nc.Node, nc.Reason); err != nil {
			return err
		}
	}
	for _, f := range r.Findings {
		if _, err := fmt.Fprintf(w, "%-20s %s\n", f.Kind, f.Words); err != nil {
			return err
		}
	}
	verdict := "the cluster's pools, blocks, nodes and pods agree"
	switch n := len(r.Findings); {
	case n > 0:
		verdict = fmt.Sprintf("%d finding(s)", n)
	case len(r.NotCompared) > 0:
		verdict = "INCOMPLETE, no finding in what was compared"
	}
	held := ""
	if r.FromNodes {
		held = fmt.Sprintf("; the ipamds of %d node(s) holding %d address(es)", r.NodesRead, r.HeldAddresses)
	}
	if _, err := fmt.Fprintf(w, "%s: %d pool(s), %d block(s), %d node(s), %d pod(s) holding %d address(es)%s compared\n",
		verdict, r.Pools, r.Blocks, r.Nodes, r.Pods, r.Addresses, held); err != nil {
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
	return clientsFor(cfg)
}

// clientsFor are the typed and dynamic clients of cfg.
func clientsFor(cfg *rest.Config) (kubernetes.Interface, dynamic.Interface, error) {
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
