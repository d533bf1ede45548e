package pool

import (
	"context"
	"log/slog"
	"net/netip"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sandboxipam/sandboxipam/cluster/api/v1alpha1"
)

// guard keeps every busy address of this node's blocks inside an IPBlock
// of this node. An IPBlock can go from the API server while pods here
// hold addresses of its block (a kubectl delete, etcd restored from an
// older backup); the block is then free for any other node to claim,
// which would hand those addresses out a second time. So, every pass:
//
//   - a block of the pool whose IPBlock is missing from the informer, and
//     that this source did not just create (Source.unseen), is looked up
//     on the API server itself (no request on any ADD, nor on a claim);
//   - a block whose IPBlock is gone, or is another node's, retires:
//     nothing more is handed out of it, and it leaves once none of its
//     addresses is held, cooling or quarantined (and while the store is
//     unproven none counts as free);
//   - while any of its addresses is busy, a gone block is claimed again
//     under this Node's UID, said as an error, and counted
//     (ipamd_pool_restored_total); its IPBlock is deleted as any retired
//     block's is, once the block has left;
//   - a block another node claimed meanwhile cannot be taken back: it is
//     said as an error and shown (Status.Foreign, ipamd_pool_foreign_blocks)
//     until its last busy address goes; `ipamctl check --cluster` names any
//     address two pods then hold;
//   - without claim (this Node is gone, so a claim under its UID would be
//     reclaimed again), a gone block with busy addresses is shown the
//     same way, with no owner: any node may claim it. Pods force-deleted
//     from the API while their sandboxes still run here are the case:
//     the API server no longer shows those addresses, so only this node
//     can say so.
//
// With fresh (after a fence, package lease), every block is looked up on
// the API server, whatever the informer holds: a block reclaimed while
// this node was cut off is found before the fence lifts. guard reports
// whether every lookup and the retire succeeded.
func (s *Source) guard(ctx context.Context, claim, fresh bool) bool {
	missing, ok := s.missingBlocks(ctx, fresh)
	var retire []netip.Prefix
	for _, p := range s.current {
		if _, ok := missing[p]; ok {
			retire = append(retire, p)
		}
	}
	if len(retire) > 0 {
		// Retired first: no ADD gets an address of them while they are
		// claimed again, and the busy counts below are final.
		next := slices.DeleteFunc(slices.Clone(s.current), func(p netip.Prefix) bool { return slices.Contains(retire, p) })
		if err := s.record(ctx, s.uid, next); err != nil {
			s.log.Error("could not retire blocks whose IPBlock is gone or another node's", slog.Any("blocks", retire), slog.Any("error", err))
			return false
		}
		s.log.Error("blocks retire: their IPBlocks are gone from the API server or another node's; nothing more is handed out of them",
			slog.Any("blocks", retire), slog.String("pool", s.cfg.Pool))
	}
	foreign := map[string]string{}
	for _, r := range s.store.Ranges() {
		p := r.Range.Prefix.Masked()
		owner, ok := missing[p]
		busy := r.Assigned + r.Cooling + r.Quarantined
		if r.Range.Group != Group || !ok || busy == 0 {
			continue
		}
		switch {
		case owner == "" && !claim:
			foreign[p.String()] = ""
		case owner == "":
			if owner = s.claimAgain(ctx, p, busy); owner != "" && owner != s.nodeName {
				foreign[p.String()] = owner
			}
		default:
			foreign[p.String()] = owner
		}
	}
	s.reportForeign(foreign)
	return ok
}

// missingBlocks maps each block of the pool whose IPBlock is not this
// node's to the node the API server's IPBlock names ("" when there is
// none). Only blocks missing from the informer, and not just created
// here, are looked up, unless fresh; a failed lookup waits for the next
// pass, and makes ok false.
func (s *Source) missingBlocks(ctx context.Context, fresh bool) (missing map[netip.Prefix]string, ok bool) {
	inAPI := map[netip.Prefix]bool{}
	for _, b := range s.myBlocks() {
		if p, err := b.Spec.Prefix(); err == nil {
			inAPI[p] = true
		}
	}
	missing, ok = map[netip.Prefix]string{}, true
	for _, r := range s.store.Ranges() {
		p := r.Range.Prefix.Masked()
		if r.Range.Group != Group || (!fresh && (inAPI[p] || s.lagging(p))) {
			continue
		}
		owner, err := s.blockOwner(ctx, p)
		switch {
		case err != nil:
			ok = false
			s.log.Warn("could not look up a block's IPBlock on the API server; trying again at the next pass",
				slog.String("block", p.String()), slog.Bool("fresh", fresh), slog.Any("error", err))
		case owner != s.nodeName: // this node's: the informer lags, or the IPBlock lost its node label
			missing[p] = owner
		}
	}
	return missing, ok
}

// blockOwner is the node the API server's IPBlock of p names, "" when
// there is none.
func (s *Source) blockOwner(ctx context.Context, p netip.Prefix) (string, error) {
	u, err := s.dyn.Resource(v1alpha1.IPBlockResource).Get(ctx, v1alpha1.BlockName(p), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	b, err := v1alpha1.BlockFrom(u)
	if err != nil {
		return "", err
	}
	return b.Spec.NodeName, nil
}

// claimAgain creates the IPBlock of p, gone while busy addresses of it
// are held here, and returns the node that holds it now: this one, the
// one whose create came first, or "" when neither could be learnt.
func (s *Source) claimAgain(ctx context.Context, p netip.Prefix, busy uint64) string {
	won, err := s.create(ctx, p)
	if err != nil {
		s.log.Error("the IPBlock of a block with busy addresses here is gone, and claiming it again failed; trying again at the next pass",
			slog.String("block", p.String()), slog.Uint64("busy", busy), slog.Any("error", err))
		return ""
	}
	if won {
		s.setStatus(func(st *Status) { st.Restored++ })
		s.log.Error("the IPBlock of a block with busy addresses here was gone from the API server; claimed it again so no other node hands them out; the block retires",
			slog.String("block", p.String()), slog.Uint64("busy", busy), slog.String("pool", s.cfg.Pool))
		return s.nodeName
	}
	owner, err := s.blockOwner(ctx, p)
	if err != nil {
		return ""
	}
	return owner
}

// reportForeign shows the blocks with busy addresses here that another
// node claimed (or, owner "", nobody while this Node is gone), and says
// so once for each that is new.
func (s *Source) reportForeign(foreign map[string]string) {
	prev := s.Status().Foreign
	for block, owner := range foreign {
		switch _, seen := prev[block]; {
		case seen:
		case owner == "":
			s.log.Error("addresses held on this node lie in a block with no IPBlock while this Node is gone: any node may claim it and hand them out again",
				slog.String("block", block), slog.String("pool", s.cfg.Pool))
			s.event(EventForeignBlock, "Addresses held on node %s lie in block %s of IPPool %s, which has no IPBlock while this Node is gone: any node may claim it and hand them out again",
				s.nodeName, block, s.cfg.Pool)
		default:
			s.log.Error("addresses held on this node lie in a block the API server records as another node's: that node may hand them out again; run ipamctl check --cluster",
				slog.String("block", block), slog.String("owner", owner), slog.String("pool", s.cfg.Pool))
			s.event(EventForeignBlock, "Addresses held on node %s lie in block %s of IPPool %s, which the API server records as node %s's (reclaimed or claimed while this node was cut off?): that node may hand them out again; nothing more is handed out of it here; run ipamctl check --cluster",
				s.nodeName, block, s.cfg.Pool, owner)
		}
	}
	if len(foreign) == 0 {
		foreign = nil
	}
	s.setStatus(func(st *Status) { st.Foreign = foreign })
}

// lagging reports whether p is a block this source created that the
// informer has not delivered yet.
func (s *Source) lagging(p netip.Prefix) bool {
	s.unseenMu.Lock()
	defer s.unseenMu.Unlock()
	return s.unseen[p]
}
