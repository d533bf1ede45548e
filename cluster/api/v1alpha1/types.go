// Package v1alpha1 is the cluster pool's API: the IPPool and IPBlock custom
// resources (group sandboxipam.io, version v1alpha1) that ipSource.type
// "pool" claims address blocks through, the reclaimer returns from dead
// nodes, and `ipamctl check --cluster` reads.
//
// An IPBlock's name is its block's canonical CIDR (BlockName), so the API
// server's create-if-absent is the claim: two nodes that pick the same
// block race on one name, and exactly one create succeeds. No leader
// election and no compare-and-swap loop sits on the claim, and nothing
// here is touched on the CNI ADD or DEL path.
//
// Geometry (geometry.go): a block of a pool lies inside one of its CIDRs
// at its block size (CheckBlock); two pools overlap when their CIDRs do
// (Overlaps). ipamd claims, routes and the reclaimer judge only blocks
// that pass CheckBlock, and no node claims from an overlap. The CRDs keep
// the geometry from changing under claimed blocks: a block size is fixed
// once set, and an IPBlock's name must be BlockName of its CIDR (both
// families, in CEL). Across objects, components/pool's admission policy
// sandboxipam-pool-blocks refuses deleting an IPPool with blocks, an edit
// that leaves one of its blocks outside its CIDRs or at another size, and
// any pool's CIDR overlapping another pool's block.
//
// The types are plain structs read and written through client-go's
// dynamic client (ToUnstructured, BlockFrom, PoolFrom): no generated
// clientset, no deepcopy code. The CRDs themselves, with the structural
// schemas the API server validates, are under deploy/kubernetes/crds.
package v1alpha1

import (
	"errors"
	"fmt"
	"net/netip"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
)

// Group and Version of the pool's resources.
const (
	Group   = "sandboxipam.io"
	Version = "v1alpha1"
)

// Resources, for the dynamic client.
var (
	IPPoolResource  = schema.GroupVersionResource{Group: Group, Version: Version, Resource: "ippools"}
	IPBlockResource = schema.GroupVersionResource{Group: Group, Version: Version, Resource: "ipblocks"}
)

// Default block sizes (prefix lengths) when an IPPool names none: 64
// addresses per IPv4 block, 64 per IPv6 block.
const (
	DefaultIPv4BlockSize = 26
	DefaultIPv6BlockSize = 122
)

// IPPool is a cluster-scoped range of pod addresses that nodes claim
// blocks of.
type IPPool struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              IPPoolSpec `json:"spec"`
}

// IPPoolSpec is an IPPool's ranges, per family, and which nodes use it.
type IPPoolSpec struct {
	// IPv4 and IPv6 are the pool's ranges of each family; at least one.
	IPv4 *PoolFamily `json:"ipv4,omitempty"`
	IPv6 *PoolFamily `json:"ipv6,omitempty"`
	// NodeSelector, when set, limits the pool to nodes whose labels
	// match; empty means every node.
	NodeSelector *metav1.LabelSelector `json:"nodeSelector,omitempty"`
}

// PoolFamily is one family's CIDRs and the size of its blocks.
type PoolFamily struct {
	// CIDRs are the ranges blocks are cut from.
	CIDRs []string `json:"cidrs,omitempty"`
	// RetiringCIDRs are ranges being taken out of the pool: no block is
	// claimed in them any more, every node retires its blocks there (they
	// drain: nothing new is handed out, each IPBlock goes once its last
	// address is free), and they stay the pool's (routed, judged by the
	// reclaimer, held against other pools) until their blocks are gone.
	// The API server refuses to drop a CIDR from a pool while a block of it
	// exists; moving it here is how an operator retires it, and removing it
	// from here once `kubectl get ipblocks` shows none of it frees it for
	// any pool.
	RetiringCIDRs []string `json:"retiringCIDRs,omitempty"`
	// BlockSize is each block's prefix length; 0 means
	// DefaultIPv4BlockSize or DefaultIPv6BlockSize.
	BlockSize int `json:"blockSize,omitempty"`
}

// IPBlock is one block of a pool, claimed by one node. Its name is
// BlockName(spec.cidr).
type IPBlock struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              IPBlockSpec `json:"spec"`
}

// IPBlockSpec says which node holds a block, and since when.
type IPBlockSpec struct {
	// Pool is the IPPool the block was cut from.
	Pool string `json:"pool"`
	// CIDR is the block, canonical (masked).
	CIDR string `json:"cidr"`
	// NodeName and NodeUID are the Node that claimed it; the UID tells a
	// node registered again under the same name from the one that
	// claimed.
	NodeName string `json:"nodeName"`
	NodeUID  string `json:"nodeUID"`
	// ClaimedAt is when the claim was made.
	ClaimedAt metav1.Time `json:"claimedAt"`
}

// Kinds, as the API server names them.
const (
	IPPoolKind  = "IPPool"
	IPBlockKind = "IPBlock"
)

// ErrBadBlockName: a name that is not the canonical name of a block.
var ErrBadBlockName = errors.New("not the name of a block")

// Families returns the pool's families that are set, IPv4 first, each
// with its block size defaulted.
func (s IPPoolSpec) Families() []PoolFamily {
	var out []PoolFamily
	if s.IPv4 != nil {
		f := *s.IPv4
		if f.BlockSize == 0 {
			f.BlockSize = DefaultIPv4BlockSize
		}
		out = append(out, f)
	}
	if s.IPv6 != nil {
		f := *s.IPv6
		if f.BlockSize == 0 {
			f.BlockSize = DefaultIPv6BlockSize
		}
		out = append(out, f)
	}
	return out
}

// Prefix parses the block's CIDR and checks that it is canonical.
func (s IPBlockSpec) Prefix() (netip.Prefix, error) {
	p, err := netip.ParsePrefix(s.CIDR)
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("spec.cidr: %w", err)
	}
	if p != p.Masked() {
		return netip.Prefix{}, fmt.Errorf("spec.cidr %s: not canonical (want %s)", s.CIDR, p.Masked())
	}
	return p, nil
}

// NodeLabel carries an IPBlock's spec.nodeName (when the name is a valid
// label value, 63 characters at most), so a node's ipamd watches only its
// own blocks with a label selector.
const NodeLabel = Group + "/node"

// NewBlock is the object that claims block p of pool for a node.
func NewBlock(pool string, p netip.Prefix, nodeName, nodeUID string, at metav1.Time) IPBlock {
	p = p.Masked()
	var labels map[string]string
	if len(validation.IsValidLabelValue(nodeName)) == 0 {
		labels = map[string]string{NodeLabel: nodeName}
	}
	return IPBlock{
		TypeMeta:   metav1.TypeMeta{APIVersion: Group + "/" + Version, Kind: IPBlockKind},
		ObjectMeta: metav1.ObjectMeta{Name: BlockName(p), Labels: labels},
		Spec:       IPBlockSpec{Pool: pool, CIDR: p.String(), NodeName: nodeName, NodeUID: nodeUID, ClaimedAt: at},
	}
}

// ToUnstructured converts a typed object for the dynamic client.
func ToUnstructured(obj any) (*unstructured.Unstructured, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, fmt.Errorf("convert %T to unstructured: %w", obj, err)
	}
	return &unstructured.Unstructured{Object: m}, nil
}

// BlockFrom converts what the dynamic client returns into an IPBlock and
// checks that its name is the canonical name of its spec.cidr.
func BlockFrom(u *unstructured.Unstructured) (IPBlock, error) {
	var b IPBlock
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &b); err != nil {
		return IPBlock{}, fmt.Errorf("IPBlock %s: %w", u.GetName(), err)
	}
	p, err := b.Spec.Prefix()
	if err != nil {
		return IPBlock{}, fmt.Errorf("IPBlock %s: %w", b.Name, err)
	}
	if want := BlockName(p); b.Name != want {
		return IPBlock{}, fmt.Errorf("IPBlock %s: name does not match spec.cidr %s (want %s)", b.Name, p, want)
	}
	return b, nil
}

// PoolFrom converts what the dynamic client returns into an IPPool.
func PoolFrom(u *unstructured.Unstructured) (IPPool, error) {
	var p IPPool
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &p); err != nil {
		return IPPool{}, fmt.Errorf("IPPool %s: %w", u.GetName(), err)
	}
	return p, nil
}
