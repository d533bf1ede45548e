package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"

	"github.com/spf13/cobra"

	"github.com/sandboxipam/sandboxipam/cluster/reclaim"
)

const confirmLong = `confirm-node-gone is an operator's word that a node's machine is gone, the
evidence the reclaimer needs when it cannot hear the node's ipamd on the data
plane itself (docs/safety.md, path 7): a Node deleted and its Lease expired
say only that the API server cannot hear the node, not that its pods stopped.

It shows the node's IPBlocks and, with --decisions, what the reclaimer last
decided of each; with --yes it annotates each block
sandboxipam.io/confirm-node-gone=<the Node's UID>, each write conditional on
the block being the version shown. It refuses while a Node of that name exists
with that UID. The reclaimer still waits for every other condition, and keeps
a block while the node's ipamd answers as itself. Confirm only once the
machine is known to be off: powered down, deleted, or its network cut for
good. It needs patch on IPBlocks (an administrator's RBAC; a node's ipamd may
not write the annotation).`

const confirmExample = `  ipamctl confirm-node-gone node-7                    # show, write nothing
  kubectl -n kube-system port-forward deploy/sandboxipam-reclaimer 61681 &
  ipamctl confirm-node-gone node-7 --decisions http://127.0.0.1:61681 --yes`

func (a *app) confirmNodeGoneCommand() *cobra.Command {
	var uid, kubeconfig, decisions string
	var yes bool
	cmd := &cobra.Command{
		Use:     "confirm-node-gone NODE [--uid UID] [--decisions URL] [--yes]",
		Short:   "confirm a dead node's machine is gone, so the reclaimer may take its blocks",
		Long:    confirmLong,
		Example: confirmExample,
		Args:    cobra.ExactArgs(1),
		RunE: a.runE(func(ctx context.Context, args []string) error {
			return a.confirmNodeGone(ctx, reclaim.GoneRequest{Node: args[0], UID: uid, Apply: yes}, kubeconfig, decisions)
		}),
	}
	cmd.Flags().StringVar(&uid, "uid", "", "the Node UID its IPBlocks record (default: the one UID they name)")
	cmd.Flags().StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig path (default $KUBECONFIG, else the in-cluster service account)")
	cmd.Flags().StringVar(&decisions, "decisions", "", "the reclaimer's HTTP address (its "+reclaim.PathDecisions+" is read and shown beside each block)")
	cmd.Flags().BoolVar(&yes, "yes", false, "write the confirmation; without it nothing is written")
	return cmd
}

func (a *app) confirmNodeGone(ctx context.Context, req reclaim.GoneRequest, kubeconfig, decisions string) error {
	cs, dyn, err := kubeClients(kubeconfig)
	if err != nil {
		return err
	}
	if decisions != "" {
		seen, err := readDecisions(ctx, decisions)
		if err != nil {
			return err
		}
		req.Seen = &seen
	}
	rep, err := reclaim.ConfirmNodeGone(ctx, reclaim.Clients{Kube: cs, Dynamic: dyn}, req)
	if err != nil {
		return err
	}
	return a.print(rep, func() error { return rep.Render(a.stdout) })
}

// readDecisions reads the reclaimer's last decisions at base.
func readDecisions(ctx context.Context, base string) (reclaim.Decisions, error) {
	var out reclaim.Decisions
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+reclaim.PathDecisions, nil)
	if err != nil {
		return out, fmt.Errorf("--decisions %s: %w", base, err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return out, fmt.Errorf("read the reclaimer's decisions: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return out, fmt.Errorf("read the reclaimer's decisions: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return out, fmt.Errorf("the reclaimer answered %s: %s", resp.Status, body)
	}
	if err := json.Unmarshal(body, &out); err != nil {
		return out, fmt.Errorf("the reclaimer's decisions: %w", err)
	}
	return out, nil
}
