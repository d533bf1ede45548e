package routes

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/cache"

	"github.com/sandboxipam/sandboxipam/cluster/api/v1alpha1"
)

// blockWants is the routes the cluster pool's IPBlocks ask for: each other
// node's block via that node's InternalIP, found by the block's
// spec.nodeName. A block whose Node is gone is skipped and named: there
// is no address to route it to, and the reclaimer takes it back only on
// evidence. A block of an earlier incarnation of the Node (the node
// registered again under a new UID) is routed to the Node of that name:
// its pods run on that machine until they go.
func (k *Keeper) blockWants(nodes []*corev1.Node, blocks []v1alpha1.IPBlock) ([]want, []Skipped) {
	byName := make(map[string]*corev1.Node, len(nodes))
	for _, n := range nodes {
		byName[n.Name] = n
	}
	slices.SortFunc(blocks, func(a, b v1alpha1.IPBlock) int { return strings.Compare(a.Name, b.Name) })
	var ws []want
	var skipped []Skipped
	for _, b := range blocks {
		if b.Spec.NodeName == k.cfg.NodeName {
			continue
		}
		p, err := b.Spec.Prefix()
		if err != nil {
			skipped = append(skipped, Skipped{Node: b.Spec.NodeName, Dst: b.Spec.CIDR, Reason: fmt.Sprintf("IPBlock %s: %v", b.Name, err)})
			continue
		}
		n, ok := byName[b.Spec.NodeName]
		if !ok {
			reason := fmt.Sprintf("IPBlock %s is claimed by Node %s, which does not exist", b.Name, b.Spec.NodeName)
			skipped = append(skipped, Skipped{Node: b.Spec.NodeName, Dst: p.String(), Reason: reason})
			continue
		}
		ws, skipped = k.appendWant(ws, skipped, n, "IPBlock", p)
	}
	return ws, skipped
}

// listBlocks converts what the IPBlock informer holds; an object that is
// not a valid IPBlock is skipped with its reason.
func listBlocks(store cache.Store) ([]v1alpha1.IPBlock, []Skipped) {
	var out []v1alpha1.IPBlock
	var bad []Skipped
	for _, obj := range store.List() {
		u, ok := obj.(*unstructured.Unstructured)
		if !ok {
			continue
		}
		b, err := v1alpha1.BlockFrom(u)
		if err != nil {
			bad = append(bad, Skipped{Dst: u.GetName(), Reason: err.Error()})
			continue
		}
		out = append(out, b)
	}
	return out, bad
}

// poolBlocks keeps the blocks that are blocks of a known pool: inside
// one of its CIDRs, at its block size (v1alpha1.CheckBlock). Any other
// IPBlock (0.0.0.0-1 written with a node's token, a block of a pool that
// does not exist, or of a size the pool never had) is skipped, named and
// never routed: a route to it would send other nodes' traffic to the
// node that wrote it.
func poolBlocks(blocks []v1alpha1.IPBlock, pools map[string]v1alpha1.IPPool) ([]v1alpha1.IPBlock, []Skipped) {
	var ok []v1alpha1.IPBlock
	var bad []Skipped
	for _, b := range blocks {
		if err := v1alpha1.CheckBlock(b, pools); err != nil {
			bad = append(bad, Skipped{Node: b.Spec.NodeName, Dst: b.Spec.CIDR, Reason: err.Error()})
			continue
		}
		ok = append(ok, b)
	}
	return ok, bad
}

// listPools converts what the IPPool informer holds, by name; one that
// does not convert is left out (its blocks are then skipped).
func listPools(store cache.Store) map[string]v1alpha1.IPPool {
	out := map[string]v1alpha1.IPPool{}
	if store == nil {
		return out
	}
	for _, obj := range store.List() {
		u, ok := obj.(*unstructured.Unstructured)
		if !ok {
			continue
		}
		if p, err := v1alpha1.PoolFrom(u); err == nil {
			out[p.Name] = p
		}
	}
	return out
}
