package pool

import (
	"context"
	"log/slog"
	"net/netip"
	"slices"

	"github.com/sandboxipam/sandboxipam/ipamd/datastore"
)

// usage is the pool's blocks as the datastore counts them.
type usage struct {
	// free counts, per family, the free addresses of current blocks.
	free map[string]uint64
	// blocks are the current (not retiring) blocks of the group.
	blocks map[netip.Prefix]datastore.RangeInfo
	// all holds every block of the group, retiring too.
	all map[netip.Prefix]bool
}

func (s *Source) usage() usage {
	u := usage{free: map[string]uint64{}, blocks: map[netip.Prefix]datastore.RangeInfo{}, all: map[netip.Prefix]bool{}}
	for _, r := range s.store.Ranges() {
		if r.Range.Group != Group {
			continue
		}
		p := r.Range.Prefix.Masked()
		u.all[p] = true
		if r.Retiring {
			continue
		}
		u.blocks[p] = r
		if busy := r.Assigned + r.Cooling + r.Quarantined; busy < r.Size {
			u.free[r.Family] += r.Size - busy
		}
	}
	return u
}

// pass compares the pool with the watermarks once: adopt at the first
// pass (and when the Node's UID changed), keep every busy address inside
// an IPBlock of this node (guard), claim below the low watermark,
// return an empty block above the high one, and delete this node's
// blocks that left the pool.
func (s *Source) pass(ctx context.Context) {
	if !s.synced() {
		s.wait("the IPPool, this Node and its IPBlocks to be listed by the API server")
		return
	}
	s.setStatus(func(st *Status) { st.Synced = true })
	gen, reread := s.rereadPending()
	n, err := s.node()
	if err != nil {
		if s.adopted {
			// This Node is gone: report and retire only. A claim under
			// its UID would be the reclaimer's to free again.
			s.liftAfterReread(ctx, gen, s.guard(ctx, false, reread) && reread)
		}
		s.wait(err.Error())
		return
	}
	if uid := string(n.UID); !s.adopted || uid != s.uid {
		if err := s.adopt(ctx, uid); err != nil {
			s.wait(err.Error())
			return
		}
	}
	s.liftAfterReread(ctx, gen, s.guard(ctx, true, reread) && reread)
	fams, whole, err := s.claimable(n)
	if whole != nil {
		s.retireOutside(ctx, whole)
	}
	if err != nil {
		s.wait(err.Error())
		s.collect(ctx)
		return
	}
	if s.store.Unproven() {
		// Every address counts as taken until the store is proven:
		// claiming now would claim for nothing.
		s.wait("ipamd to prove which addresses are free (the runtime's first listing)")
		return
	}
	if err := s.grow(ctx, fams, s.usage()); err != nil {
		s.wait(err.Error())
		return
	}
	s.ok()
	s.shrink(ctx, s.usage())
	s.collect(ctx)
}

// wait records why the pool cannot grow now: an ADD that finds no free
// address is answered "try again later" naming it.
func (s *Source) wait(reason string) {
	s.store.SetGrowthWaiting(s.growthWhy(reason))
	s.store.SetPoolWaiting(s.waitingFirst() + ": " + reason)
	s.setStatus(func(st *Status) { st.Waiting, st.LastError = reason, reason })
}

// ok records that the pool grows as it should.
func (s *Source) ok() {
	s.store.SetGrowthWaiting(s.growthWhy("the next claim (free addresses are compared with ipSource.pool.lowWatermark every ipSource.pool.interval)"))
	s.store.SetPoolWaiting(s.waitingFirst())
	s.setStatus(func(st *Status) { st.Waiting, st.LastError = "", "" })
}

// record makes blocks the pool's current blocks, durably, with uid.
func (s *Source) record(ctx context.Context, uid string, blocks []netip.Prefix) error {
	nr := datastore.NodeRanges{Group: Group, Name: s.recordName(), UID: uid, Current: toRanges(blocks)}
	if err := s.store.SetNodeRanges(ctx, nr); err != nil {
		return err
	}
	s.uid, s.current = uid, slices.Clone(blocks)
	s.renewer.SetUID(uid)
	s.publish()
	s.opts.OnChange()
	return nil
}

// adopt makes the pool agree with this node's IPBlocks: blocks carrying
// uid that the record lacks are adopted (a crash between the create and
// the record); recorded blocks whose IPBlock is gone, or carries another
// UID (the Node registered again), retire: they hand out nothing more,
// and leave once no pod holds an address of them.
func (s *Source) adopt(ctx context.Context, uid string) error {
	inAPI := map[netip.Prefix]bool{}
	var adopted []netip.Prefix
	for _, b := range s.myBlocks() {
		p, _ := b.Spec.Prefix()
		if b.Spec.NodeUID != uid {
			continue
		}
		inAPI[p] = true
		if !slices.Contains(s.current, p) {
			adopted = append(adopted, p)
		}
	}
	keep := slices.DeleteFunc(slices.Clone(s.current), func(p netip.Prefix) bool { return !inAPI[p] })
	for _, p := range s.current {
		if !inAPI[p] {
			s.log.Error("a recorded block has no IPBlock of this Node any more (deleted by someone else, or the Node registered again): it retires, handing out nothing more",
				slog.String("block", p.String()), slog.String("pool", s.cfg.Pool), slog.String("uid", uid))
		}
	}
	next := append(keep, adopted...)
	slices.SortFunc(next, func(a, b netip.Prefix) int { return a.Addr().Compare(b.Addr()) })
	if uid != s.uid || !slices.Equal(next, s.current) {
		if err := s.record(ctx, uid, next); err != nil {
			return err
		}
	}
	for _, p := range adopted {
		s.log.Warn("adopted an IPBlock of this Node that the checkpoint lacked (ipamd stopped between its claim and the record)",
			slog.String("block", p.String()), slog.String("pool", s.cfg.Pool))
	}
	s.adopted = true
	s.setStatus(func(st *Status) { st.Adopted += len(adopted) })
	return nil
}
