package pool

import (
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/sandboxipam/sandboxipam/cluster/api/v1alpha1"
)

// allPools is every IPPool the informer holds; one that does not convert
// is left out and said.
func (s *Source) allPools() []v1alpha1.IPPool {
	var out []v1alpha1.IPPool
	for _, obj := range s.pools.GetStore().List() {
		u, _ := obj.(*unstructured.Unstructured)
		if u == nil {
			continue
		}
		p, err := v1alpha1.PoolFrom(u)
		if err != nil {
			s.log.Warn("IPPool ignored", slog.Any("error", err))
			continue
		}
		out = append(out, p)
	}
	return out
}

// claimable is the pool's families as claims may use them, and the pool
// as the IPPool says it (retire uses that): a pool whose nodeSelector
// does not select this Node gives no family to claim from; a CIDR that
// overlaps another pool's is left out (neither pool's nodes claim from
// the overlap: blocks of two sizes, or two nodes' claims of one address
// under two names, would follow), said loudly and shown (Status.Overlaps,
// ipamd_pool_overlapping_cidrs).
func (s *Source) claimable(n *corev1.Node) (claim, whole []family, err error) {
	pools := s.allPools()
	i := slices.IndexFunc(pools, func(p v1alpha1.IPPool) bool { return p.Name == s.cfg.Pool })
	if i < 0 {
		return nil, nil, fmt.Errorf("IPPool %s does not exist", s.cfg.Pool)
	}
	whole, err = families(pools[i].Spec)
	if err != nil {
		return nil, nil, fmt.Errorf("IPPool %s: %w", s.cfg.Pool, err)
	}
	if err := selects(pools[i].Spec.NodeSelector, n); err != nil {
		return nil, whole, fmt.Errorf("IPPool %s: %w", s.cfg.Pool, err)
	}
	overlapping := v1alpha1.Overlapping(s.cfg.Pool, pools)
	s.reportOverlaps(overlapping)
	for _, f := range whole {
		f.cidrs = slices.DeleteFunc(slices.Clone(f.cidrs), func(c netip.Prefix) bool { _, bad := overlapping[c]; return bad })
		if len(f.cidrs) > 0 {
			claim = append(claim, f)
		}
	}
	if len(claim) == 0 {
		return nil, whole, fmt.Errorf("every CIDR of IPPool %s overlaps another IPPool's (ipamctl check --cluster names them): no block is claimed", s.cfg.Pool)
	}
	return claim, whole, nil
}

// selects is nil when sel (nil: every node) selects Node n.
func selects(sel *metav1.LabelSelector, n *corev1.Node) error {
	if sel == nil {
		return nil
	}
	ls, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		return fmt.Errorf("spec.nodeSelector: %w", err)
	}
	if !ls.Matches(labels.Set(n.Labels)) {
		return fmt.Errorf("spec.nodeSelector %s does not select this Node %s: no block is claimed", ls, n.Name)
	}
	return nil
}

// reportOverlaps shows the pool's CIDRs that overlap another pool's, and
// says each new one as an error.
func (s *Source) reportOverlaps(o map[netip.Prefix]v1alpha1.Overlap) {
	var texts []string
	prev := s.Status().Overlaps
	for _, ov := range o {
		t := ov.String()
		texts = append(texts, t)
		if !slices.Contains(prev, t) {
			s.log.Error("IPPools overlap: no block of the overlap is claimed until one of them changes; run ipamctl check --cluster",
				slog.String("overlap", t))
		}
	}
	slices.Sort(texts)
	s.setStatus(func(st *Status) { st.Overlaps = texts })
}

// retireOutside retires this node's blocks that are no block of the pool
// any more: a CIDR moved to retiringCIDRs (the way an operator retires
// it, docs/cluster.md "Retiring a CIDR"), or a family retired. Nothing more is
// handed out of them; the datastore keeps them while any address is
// busy, and collect deletes each IPBlock once its block has left.
func (s *Source) retireOutside(ctx context.Context, whole []family) {
	var keep, gone []netip.Prefix
	for _, p := range s.current {
		if slices.ContainsFunc(whole, func(f family) bool { return f.contains(p) }) {
			keep = append(keep, p)
		} else {
			gone = append(gone, p)
		}
	}
	if len(gone) == 0 {
		return
	}
	if err := s.record(ctx, s.uid, keep); err != nil {
		s.log.Error("could not retire blocks outside the IPPool's CIDRs", slog.Any("blocks", gone), slog.Any("error", err))
		return
	}
	s.log.Warn("blocks retire: no longer inside the IPPool's CIDRs at its block size; nothing more is handed out of them, and each is returned once empty",
		slog.Any("blocks", gone), slog.String("pool", s.cfg.Pool))
}
