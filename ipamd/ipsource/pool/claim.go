package pool

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/netip"
	"slices"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/sandboxipam/sandboxipam/cluster/api/v1alpha1"
	"github.com/sandboxipam/sandboxipam/ipamd/datastore"
)

// fullBackoff is how long a family whose pool had no free block waits
// before it probes again.
const fullBackoff = 30 * time.Second

// fullPool is a family's last failed probe of a full pool.
type fullPool struct {
	until time.Time
	err   error
}

// errPoolFull: every block of a family is claimed (or maxProbes creates
// found none free).
var errPoolFull = errors.New("no free block")

// grow claims one block of each family whose free addresses are below
// the low watermark, and records them before any is used.
func (s *Source) grow(ctx context.Context, fams []family, u usage) error {
	var claimed []netip.Prefix
	var errs []error
	start, conflicts := time.Now(), s.Status().Conflicts
	for _, f := range fams {
		if u.free[f.name] >= uint64(s.cfg.LowWatermark) {
			delete(s.full, f.name)
			continue
		}
		if full, ok := s.full[f.name]; ok && s.opts.Now().Before(full.until) {
			errs = append(errs, full.err)
			continue
		}
		p, err := s.claim(ctx, f, u)
		if err != nil {
			err = fmt.Errorf("claim an %s block: %w", f.name, err)
			if errors.Is(err, errPoolFull) {
				// Probing a full pool again at once would cost maxProbes
				// requests a pass; blocks come free rarely.
				s.full[f.name] = fullPool{until: s.opts.Now().Add(fullBackoff), err: err}
			}
			errs = append(errs, err)
			continue
		}
		delete(s.full, f.name)
		claimed = append(claimed, p)
	}
	if len(claimed) == 0 {
		return errors.Join(errs...)
	}
	next := append(slices.Clone(s.current), claimed...)
	slices.SortFunc(next, func(a, b netip.Prefix) int { return a.Addr().Compare(b.Addr()) })
	if err := s.record(ctx, s.uid, next); err != nil {
		// Not recorded: nothing was handed out of them. Give them back
		// now; a restart would adopt them otherwise.
		s.log.Error("could not record claimed blocks; returning them", slog.Any("blocks", claimed), slog.Any("error", err))
		for _, p := range claimed {
			s.deleteBlock(ctx, p)
		}
		return errors.Join(append(errs, fmt.Errorf("record claimed blocks: %w", err))...)
	}
	s.log.Info("claimed blocks", slog.String("pool", s.cfg.Pool), slog.Any("blocks", claimed))
	if s.opts.OnClaim != nil {
		s.opts.OnClaim(Claim{Blocks: claimed, Took: time.Since(start), Conflicts: s.Status().Conflicts - conflicts})
	}
	return errors.Join(errs...)
}

// claim creates the IPBlock of a block of f that is not this node's, in
// this node's probe order from where its last claim stopped (the cursor),
// wrapping around once; AlreadyExists tries the next. A probe that always
// started at the beginning would, in a nearly full pool, try the same
// taken blocks forever (the scale benchmark found it so).
func (s *Source) claim(ctx context.Context, f family, u usage) (netip.Prefix, error) {
	from, tries, seen := s.cursor[f.name], 0, s.seenBlocks(u)
	n, _ := s.node() // nil: the name's hash orders the probe
	order := orderFor(s.nodeName, n)
	for round := range 2 {
		i := -1
		for p := range f.probe(order) {
			i++
			if round == 1 && i >= from {
				break
			}
			if (round == 0 && i < from) || slices.ContainsFunc(seen, p.Overlaps) {
				continue
			}
			if tries == maxProbes {
				s.cursor[f.name] = i
				return netip.Prefix{}, fmt.Errorf("no free block of IPPool %s among the %d tried; the next pass goes on from there", s.cfg.Pool, tries)
			}
			tries++
			won, err := s.create(ctx, p)
			if err != nil {
				s.cursor[f.name] = i
				return netip.Prefix{}, err
			}
			if won {
				s.cursor[f.name] = i + 1
				return p, nil
			}
		}
	}
	return netip.Prefix{}, fmt.Errorf("%w of IPPool %s after %d tries: every block tried is claimed", errPoolFull, s.cfg.Pool, tries)
}

// seenBlocks is every block this source can see: the datastore's (current
// and retiring) and every IPBlock in the informer. A claim creates no
// block that overlaps one of them (of any pool, of any size); see the
// package doc for what only the API server's names and the pools'
// geometry close.
func (s *Source) seenBlocks(u usage) []netip.Prefix {
	out := slices.Collect(maps.Keys(u.all))
	out = append(out, s.current...)
	for _, b := range s.nodeBlocks(func(v1alpha1.IPBlock) bool { return true }) {
		if p, err := b.Spec.Prefix(); err == nil {
			out = append(out, p)
		}
	}
	return out
}

// create claims block p: true when this create made its IPBlock, false
// when the block is another's (AlreadyExists).
func (s *Source) create(ctx context.Context, p netip.Prefix) (bool, error) {
	obj := v1alpha1.NewBlock(s.cfg.Pool, p, s.nodeName, s.uid, metav1.NewTime(s.opts.Now()))
	un, err := v1alpha1.ToUnstructured(&obj)
	if err != nil {
		return false, err
	}
	// Held across the create: the informer may deliver the new IPBlock
	// before Create returns, and its delivery must find p marked.
	s.unseenMu.Lock()
	defer s.unseenMu.Unlock()
	_, err = s.dyn.Resource(v1alpha1.IPBlockResource).Create(ctx, un, metav1.CreateOptions{})
	switch {
	case apierrors.IsAlreadyExists(err):
		s.setStatus(func(st *Status) { st.Conflicts++ })
		return false, nil
	case err != nil:
		return false, fmt.Errorf("create IPBlock %s: %w", obj.Name, err)
	}
	s.unseen[p] = true
	s.setStatus(func(st *Status) { st.Claims++ })
	return true, nil
}

// shrink returns at most one block: one empty for the return grace whose
// family keeps more than the high watermark free, and at least the low
// watermark without it.
func (s *Source) shrink(ctx context.Context, u usage) {
	now := s.opts.Now()
	for p := range s.emptySince {
		if r, ok := u.blocks[p]; !ok || r.Assigned+r.Cooling+r.Quarantined > 0 {
			delete(s.emptySince, p)
		}
	}
	for _, p := range s.current {
		r, ok := u.blocks[p]
		if !ok || r.Assigned+r.Cooling+r.Quarantined > 0 {
			continue
		}
		since, seen := s.emptySince[p]
		if !seen {
			s.emptySince[p] = now
			continue
		}
		free := u.free[r.Family]
		if now.Sub(since) < s.cfg.ReturnGrace || free <= uint64(s.cfg.HighWatermark) ||
			free-r.Size < uint64(s.cfg.LowWatermark) {
			continue
		}
		s.giveBack(ctx, p)
		return
	}
}

// giveBack takes an empty block out of the pool (only if it still is
// empty: the datastore checks under its lock), records the pool without
// it, and deletes its IPBlock (collect does, with preconditions).
func (s *Source) giveBack(ctx context.Context, p netip.Prefix) {
	removed, err := s.store.RemoveRange(ctx, p)
	if err != nil || !removed {
		return
	}
	next := slices.DeleteFunc(slices.Clone(s.current), func(q netip.Prefix) bool { return q == p })
	if err := s.record(ctx, s.uid, next); err != nil {
		s.log.Error("could not record a returned block; the record keeps it until the next write", slog.String("block", p.String()), slog.Any("error", err))
		return
	}
	delete(s.emptySince, p)
	s.setStatus(func(st *Status) { st.Returns++ })
	s.log.Info("returned an empty block", slog.String("block", p.String()), slog.String("pool", s.cfg.Pool))
}

// collect deletes this node's IPBlocks that are in no block of the pool
// (returned, retired and left, claimed and not recorded, or of a pool this
// node no longer uses), once the store is proven and no assignment holds
// an address of them.
func (s *Source) collect(ctx context.Context) {
	if s.store.Unproven() {
		return
	}
	u := s.usage()
	held := s.store.Assignments()
	for _, b := range append(s.myBlocks(), s.strayBlocks()...) {
		p, err := b.Spec.Prefix()
		if err != nil || u.all[p] || slices.Contains(s.current, p) {
			continue
		}
		if slices.ContainsFunc(held, func(a datastore.Assignment) bool {
			return slices.ContainsFunc(a.IPs(), p.Contains)
		}) {
			continue
		}
		s.deleteBlock(ctx, p)
	}
}

// deleteBlock deletes this node's IPBlock of p with its UID and
// resourceVersion as preconditions, so a block claimed again meanwhile
// (by anyone) is never deleted. A failure waits for the next pass.
func (s *Source) deleteBlock(ctx context.Context, p netip.Prefix) {
	name := v1alpha1.BlockName(p)
	obj, ok, err := s.blocks.GetStore().GetByKey(name)
	if err != nil || !ok {
		return
	}
	u, _ := obj.(*unstructured.Unstructured)
	if u == nil {
		return
	}
	uid, rv := u.GetUID(), u.GetResourceVersion()
	err = s.dyn.Resource(v1alpha1.IPBlockResource).Delete(ctx, name, metav1.DeleteOptions{
		Preconditions: &metav1.Preconditions{UID: &uid, ResourceVersion: &rv}})
	switch {
	case err == nil, apierrors.IsNotFound(err):
		s.log.Info("deleted IPBlock", slog.String("block", p.String()), slog.String("pool", s.cfg.Pool))
	default:
		s.log.Warn("could not delete IPBlock; trying again at the next pass", slog.String("block", p.String()), slog.Any("error", err))
	}
}
