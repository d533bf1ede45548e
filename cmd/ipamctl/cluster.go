package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/sandboxipam/sandboxipam/cluster/clustercheck"
	"github.com/sandboxipam/sandboxipam/cluster/clustercheck/kubesnap"
	"github.com/sandboxipam/sandboxipam/ipamd/introspect/client"
)

// errClusterFindings: ipamctl check --cluster found something (exit 1).
var errClusterFindings = errors.New("findings in the cluster")

// userAgent is what ipamctl calls itself to the API server.
const userAgent = "sandboxipam-ipamctl"

// check runs the node check (no arguments) or, with --cluster, the
// cluster-wide one.
func (c command) check(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("check", flag.ContinueOnError)
	cluster := fs.Bool("cluster", false, "compare the cluster's IPPools, IPBlocks, Nodes and Pods through the Kubernetes API instead of this node's ipamd")
	kubeconfig := fs.String("kubeconfig", "", "kubeconfig `path` for --cluster (default $KUBECONFIG, else the in-cluster service account)")
	fs.SetOutput(io.Discard)
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("%w: check [--cluster [--kubeconfig PATH]]: %v", errUsage, err)
	}
	if fs.NArg() != 0 {
		return fmt.Errorf("%w: check [--cluster [--kubeconfig PATH]]: unexpected %q", errUsage, fs.Args())
	}
	if !*cluster {
		if *kubeconfig != "" {
			return fmt.Errorf("%w: --kubeconfig needs --cluster", errUsage)
		}
		return c.checkNode(ctx)
	}
	return c.checkCluster(ctx, *kubeconfig)
}

func (c command) checkNode(ctx context.Context) error {
	v, err := c.client.Check(ctx)
	if perr := c.print(v, err, func() error { return client.RenderCheck(c.out, v) }); perr != nil {
		return perr
	}
	if n := len(v.Disagreements); n > 0 {
		return fmt.Errorf("%w: %d", errDisagree, n)
	}
	return nil
}

func (c command) checkCluster(ctx context.Context, kubeconfig string) error {
	cfg, err := restConfig(kubeconfig)
	if err != nil {
		return err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("kubernetes client: %w", err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("kubernetes dynamic client: %w", err)
	}
	v, err := kubesnap.Check(ctx, cs, dyn)
	if perr := c.print(v, err, func() error { return client.RenderClusterCheck(c.out, v) }); perr != nil {
		return perr
	}
	if n := len(v.Findings); n > 0 {
		return fmt.Errorf("%w: %d, %d of them duplicate addresses", errClusterFindings, n, v.Count(clustercheck.DuplicateAddress))
	}
	return nil
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
			return nil, fmt.Errorf("check --cluster: no --kubeconfig, no $KUBECONFIG, and not in a pod: %w", err)
		}
	} else if cfg, err = clientcmd.BuildConfigFromFlags("", kubeconfig); err != nil {
		return nil, fmt.Errorf("--kubeconfig %s: %w", kubeconfig, err)
	}
	cfg.UserAgent = userAgent
	return cfg, nil
}
