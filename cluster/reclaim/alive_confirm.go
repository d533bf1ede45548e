package reclaim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/sandboxipam/sandboxipam/cluster/api/ipamdlease"
	"github.com/sandboxipam/sandboxipam/cluster/api/v1alpha1"
)

// Errors ConfirmNodeGone's callers branch on.
var (
	// ErrNodeExists: the Node of that name exists with the UID to confirm;
	// the API server hears it, so it is not gone.
	ErrNodeExists = errors.New("the Node exists with that UID")
	// ErrNoBlocks: no IPBlock names the node (under the UID, when given).
	ErrNoBlocks = errors.New("no IPBlock of that node")
	// ErrSeveralUIDs: the node's blocks name more than one UID and none
	// was given.
	ErrSeveralUIDs = errors.New("the node's IPBlocks name several UIDs")
)

// GoneRequest is an operator's confirmation that a node's machine is
// gone (`ipamctl`; the command only maps its flags onto this).
type GoneRequest struct {
	// Node is the node's name; UID its Node's UID, as the blocks record
	// it (empty: the one UID its blocks name).
	Node, UID string
	// Seen is what the reclaimer last decided (its PathDecisions), shown
	// beside each block; nil when it could not be read.
	Seen *Decisions
	// Apply writes the confirmation; false only shows what would be
	// confirmed and what the reclaimer saw.
	Apply bool
}

// GoneReport is what ConfirmNodeGone found and did.
type GoneReport struct {
	Node string `json:"node"`
	UID  string `json:"uid"`
	// Blocks are the node's blocks under UID, in name order.
	Blocks []GoneBlock `json:"blocks"`
	// Applied: the confirmation was written on every block.
	Applied bool `json:"applied"`
}

// GoneBlock is one block, with the reclaimer's last decision on it.
type GoneBlock struct {
	Name string `json:"name"`
	CIDR string `json:"cidr"`
	// Decision is the reclaimer's last, nil when it has none.
	Decision *Decision `json:"decision,omitempty"`
}

// ConfirmNodeGone annotates every IPBlock of req.Node under its UID with
// ipamdlease.ConfirmNodeGoneAnnotation (condition (e)), once the Node is
// shown not to exist under that UID. Each write carries the block's
// resourceVersion: a block changed since it was read is not confirmed,
// and the error says so. It writes nothing unless req.Apply.
func ConfirmNodeGone(ctx context.Context, c Clients, req GoneRequest) (GoneReport, error) {
	rep := GoneReport{Node: req.Node, UID: req.UID}
	blocks, err := nodeBlocks(ctx, c, req.Node)
	if err != nil {
		return rep, err
	}
	if rep.UID, err = theUID(req, blocks); err != nil {
		return rep, err
	}
	n, err := c.Kube.CoreV1().Nodes().Get(ctx, req.Node, metav1.GetOptions{})
	switch {
	case err == nil && string(n.UID) == rep.UID:
		return rep, fmt.Errorf("node %s: %w %s: the API server hears it", req.Node, ErrNodeExists, rep.UID)
	case err != nil && !apierrors.IsNotFound(err):
		return rep, fmt.Errorf("get Node %s: %w", req.Node, err)
	}
	var mine []v1alpha1.IPBlock
	for _, b := range blocks {
		if b.Spec.NodeUID == rep.UID {
			mine = append(mine, b)
			rep.Blocks = append(rep.Blocks, GoneBlock{Name: b.Name, CIDR: b.Spec.CIDR, Decision: decisionOf(req.Seen, b.Name)})
		}
	}
	if !req.Apply {
		return rep, nil
	}
	for _, b := range mine {
		if err := confirmBlock(ctx, c, b, rep.UID); err != nil {
			return rep, err
		}
	}
	rep.Applied = true
	return rep, nil
}

// nodeBlocks are node's IPBlocks, in name order.
func nodeBlocks(ctx context.Context, c Clients, node string) ([]v1alpha1.IPBlock, error) {
	list, err := c.Dynamic.Resource(v1alpha1.IPBlockResource).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list IPBlocks: %w", err)
	}
	var out []v1alpha1.IPBlock
	for i := range list.Items {
		b, err := v1alpha1.BlockFrom(&list.Items[i])
		if err != nil {
			return nil, err
		}
		if b.Spec.NodeName == node {
			out = append(out, b)
		}
	}
	slices.SortFunc(out, func(a, b v1alpha1.IPBlock) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// theUID is req.UID, or the one UID the blocks name.
func theUID(req GoneRequest, blocks []v1alpha1.IPBlock) (string, error) {
	uids := map[string]bool{}
	for _, b := range blocks {
		uids[b.Spec.NodeUID] = true
	}
	switch {
	case req.UID != "" && uids[req.UID]:
		return req.UID, nil
	case req.UID != "":
		return req.UID, fmt.Errorf("node %s UID %s: %w", req.Node, req.UID, ErrNoBlocks)
	case len(uids) == 0:
		return "", fmt.Errorf("node %s: %w", req.Node, ErrNoBlocks)
	case len(uids) > 1:
		return "", fmt.Errorf("node %s: %w (%s): give the UID to confirm", req.Node, ErrSeveralUIDs, strings.Join(slices.Sorted(maps.Keys(uids)), ", "))
	}
	return blocks[0].Spec.NodeUID, nil
}

// confirmBlock writes the annotation on b, on the condition that b is
// the version read.
func confirmBlock(ctx context.Context, c Clients, b v1alpha1.IPBlock, uid string) error {
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"resourceVersion": b.ResourceVersion, "uid": b.UID,
		"annotations": map[string]string{ipamdlease.ConfirmNodeGoneAnnotation: uid}}})
	if err != nil {
		return err
	}
	_, err = c.Dynamic.Resource(v1alpha1.IPBlockResource).Patch(ctx, b.Name, types.MergePatchType, patch, metav1.PatchOptions{})
	if apierrors.IsConflict(err) {
		return fmt.Errorf("IPBlock %s changed since it was shown; nothing more confirmed, run again: %w", b.Name, err)
	}
	if err != nil {
		return fmt.Errorf("annotate IPBlock %s: %w", b.Name, err)
	}
	return nil
}

func decisionOf(seen *Decisions, block string) *Decision {
	if seen == nil || seen.Pass == nil {
		return nil
	}
	for i := range seen.Pass.Decisions {
		if seen.Pass.Decisions[i].Block == block {
			d := seen.Pass.Decisions[i]
			return &d
		}
	}
	return nil
}

// Render writes the report for an operator: each block and what the
// reclaimer last said of it, then what was done.
func (r GoneReport) Render(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "node %s (UID %s): %d IPBlock(s)\n", r.Node, r.UID, len(r.Blocks))
	for _, blk := range r.Blocks {
		fmt.Fprintf(&b, "  %s (%s)\n", blk.Name, blk.CIDR)
		if d := blk.Decision; d != nil {
			fmt.Fprintf(&b, "    the reclaimer saw: node gone %v, node Lease expired %v, pods %d, ipamd Lease stopped %v, node silent or confirmed %v\n",
				d.NodeGone, d.LeaseExpired, len(d.Pods), d.IpamdStopped, d.NodeDead)
			if d.Keep != "" {
				fmt.Fprintf(&b, "    kept: %s\n", d.Keep)
			}
		} else {
			b.WriteString("    the reclaimer's decision: not available\n")
		}
	}
	if r.Applied {
		fmt.Fprintf(&b, "confirmed: %s=%s written on %d block(s); the reclaimer takes them once the other conditions hold\n",
			ipamdlease.ConfirmNodeGoneAnnotation, r.UID, len(r.Blocks))
	} else {
		b.WriteString("nothing written: confirm only once the machine is known to be off (powered down, deleted, or its network cut for good)\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}
