package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/sandboxipam/sandboxipam/ipamd/introspect/client"
)

// errDisagree: ipamctl check found disagreements (exit 1).
var errDisagree = errors.New("disagreements between ipamd, the runtime and the kernel")

const checkLong = `check compares ipamd's assignments, the runtime's sandboxes (through ipamd's
adapter) and the kernel's pod links and routes on this node, and prints each
disagreement in words: an address with no route, a route nobody holds, a
sandbox with no address, an address of a sandbox the runtime no longer lists,
one address on two holders, the runtime or the pod's netns showing another
address.

A check that could not look does not pass. When ipamd has no adapter, the
runtime cannot be listed, or the kernel's pod links cannot be read, the first
line says what was not compared and why (NOT COMPARED: ...), -o json carries
it in "notCompared", and check exits 3 unless it found a disagreement (1 wins).
With the plugin as IPAM only (podLinks.podWiring: ipamOnly) pods have no link
of ipamd's to compare: a note says so, and that alone does not fail the check.

With --cluster it compares the whole cluster through the Kubernetes API
instead: blocks that overlap or lie outside their pool, blocks of nodes that
are gone, pod addresses outside their node's blocks and podCIDRs, one address
on two pods. It also asks every node's ipamd what it holds (ipamctl pods -o
json, run in the node's ipamd pod through pods/exec, as kubectl exec does),
and joins that with the API: one address held by the ipamds of two nodes, an
address an ipamd holds outside its node's blocks and podCIDRs, an address an
ipamd holds while a pod on another node has it in the API; each names both
sides. A node whose ipamd could not be read, and a node whose Node is gone
from the API (nothing reaches its ipamd through the API server: a node cut
off from the API server alone may still run pods on its blocks), are listed
first as NOT COMPARED with the reason, and the check exits 3 unless it found
something (1 wins). --from-nodes=false asks no node (for a user without
pods/exec): then only the API's objects are compared, and a note says so.
The kubeconfig comes from --kubeconfig, $KUBECONFIG, or the pod's service
account (it needs list on IPPools, IPBlocks, Nodes and Pods, and create on
pods/exec unless --from-nodes=false). Any list that fails fails the check
(exit 1); it never passes on empty lists.

Exit codes: 0 all compared and agreeing; 1 a disagreement or finding, or an
error; 2 usage; 3 no disagreement or finding, but something not compared.`

const checkExample = `  ipamctl check || page-someone         # 1: a disagreement; 3: the runtime or kernel was not compared
  ipamctl check -o json | jq '.notCompared, .disagreements'
  ipamctl check --cluster -o json       # 1 when one address is on two pods, anywhere
  ipamctl check --cluster --kubeconfig ./admin.kubeconfig
  ipamctl check --cluster --from-nodes=false   # the API's objects only, without pods/exec`

func (a *app) checkCommand() *cobra.Command {
	var cluster, fromNodes bool
	var kubeconfig string
	cmd := &cobra.Command{
		Use:     "check [--cluster [--kubeconfig PATH] [--from-nodes=false]]",
		Short:   "compare ipamd, the runtime and the kernel (or, --cluster, the whole cluster)",
		Long:    checkLong,
		Example: checkExample,
		Args:    cobra.NoArgs,
		PreRunE: func(cmd *cobra.Command, _ []string) error {
			if kubeconfig != "" && !cluster {
				return fmt.Errorf("%w: --kubeconfig needs --cluster", errUsage)
			}
			if cmd.Flags().Changed("from-nodes") && !cluster {
				return fmt.Errorf("%w: --from-nodes needs --cluster", errUsage)
			}
			return nil
		},
		RunE: a.runE(func(ctx context.Context, _ []string) error {
			if cluster {
				return a.checkCluster(ctx, kubeconfig, fromNodes)
			}
			return a.checkNode(ctx)
		}),
	}
	cmd.Flags().BoolVar(&cluster, "cluster", false, "compare the cluster's IPPools, IPBlocks, Nodes and Pods through the Kubernetes API instead of this node's ipamd")
	cmd.Flags().BoolVar(&fromNodes, "from-nodes", true, "with --cluster, also ask every node's ipamd what it holds (ipamctl pods, through pods/exec in its ipamd pod)")
	cmd.Flags().StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig path for --cluster (default $KUBECONFIG, else the in-cluster service account)")
	return cmd
}

// checkNode prints the node check and turns it into the exit code: a
// disagreement fails it (1); else anything not compared fails it too (3).
func (a *app) checkNode(ctx context.Context) error {
	v, err := a.reads().Check(ctx)
	if err != nil {
		return err
	}
	if err := a.print(v, func() error { return client.RenderCheck(a.stdout, v) }); err != nil {
		return err
	}
	if n := len(v.Disagreements); n > 0 {
		return fmt.Errorf("%w: %d", errDisagree, n)
	}
	if len(v.NotCompared) > 0 {
		sources := make([]string, 0, len(v.NotCompared))
		for _, nc := range v.NotCompared {
			sources = append(sources, nc.Source)
		}
		return fmt.Errorf("%w: no disagreement in what was compared, but %s not compared", errNotCompared, strings.Join(sources, " and "))
	}
	return nil
}
