package pool

import (
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"strconv"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sandboxipam/sandboxipam/cluster/api/ipamdlease"
	"github.com/sandboxipam/sandboxipam/cluster/api/v1alpha1"
)

// fence is the pool source's side of self-fencing (package lease): the
// Renewer raises it when this ipamd's Lease lapses, and a pass lifts it
// only after the Lease is fresh again, every block has been read from
// the API server itself (guard, fresh), so a block reclaimed meanwhile
// retires and is reported before any ADD could get an address of it, and
// every block to be handed out of has been written (writeBlocks), so a
// reclaim judged before the lift can no longer land.
// It is raised at start too: after a restart nothing says when the Lease
// was last renewed.
type fence struct {
	store Store
	mu    sync.Mutex
	// gen counts raises: a pass lifts only the raise it read before its
	// fresh reads, never one that came while they ran.
	gen uint64
	why string
}

func (f *fence) raise(why string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.gen++
	f.why = why
	f.store.SetFenced(why)
}

// raised is the current raise, and whether there is one.
func (f *fence) raised() (uint64, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.gen, f.why != ""
}

// lift lifts raise gen, unless another came since.
func (f *fence) lift(gen uint64) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if gen != f.gen || f.why == "" {
		return false
	}
	f.why = ""
	f.store.SetFenced("")
	return true
}

// rereadPending reports whether the fence is up while the Lease is fresh:
// the pass then reads every block from the API server, and returns the
// raise it may lift.
func (s *Source) rereadPending() (uint64, bool) {
	gen, up := s.fence.raised()
	return gen, up && s.renewer.Fresh()
}

// liftAfterReread lifts raise gen once the fresh reads all succeeded and
// every block to be handed out of was written (writeBlocks).
func (s *Source) liftAfterReread(ctx context.Context, gen uint64, ok bool) {
	if !ok || ctx.Err() != nil || !s.writeBlocks(ctx) {
		return
	}
	if s.fence.lift(gen) {
		s.log.Warn("fence lifted: this ipamd's Lease is renewed and its blocks were read again from the API server and written",
			slog.String("lease", s.renewer.Name()), slog.Any("blocks", s.current))
	}
}

// writeBlocks updates the IPBlock of every current block before the fence
// lifts (issue 44). A reclaimer may have judged a block on this ipamd's
// Lease while it was stale, and its delete, which carries the
// resourceVersion it judged, may still be in flight: the write changes
// the resourceVersion, so that delete fails with a Conflict; and if the
// delete landed first, the write fails (NotFound) and the fence stays up
// until the next pass retires the block (guard). Lifting and reclaiming
// are thus ordered by the API server, not by timing. It reports whether
// every write succeeded; a failure keeps the fence up for this pass.
func (s *Source) writeBlocks(ctx context.Context) bool {
	for _, p := range s.current {
		if err := s.writeBlock(ctx, p); err != nil {
			s.log.Warn("fence kept: a block could not be written before handing out of it again; trying again at the next pass",
				slog.String("block", p.String()), slog.Any("error", err))
			return false
		}
	}
	return true
}

// writeBlock raises the IPBlock of p's ipamdlease.FenceLiftAnnotation, on
// the resourceVersion just read, when it is this node's under its UID.
func (s *Source) writeBlock(ctx context.Context, p netip.Prefix) error {
	blocks := s.dyn.Resource(v1alpha1.IPBlockResource)
	name := v1alpha1.BlockName(p)
	u, err := blocks.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("read IPBlock %s: %w", name, err)
	}
	b, err := v1alpha1.BlockFrom(u)
	if err != nil {
		return err
	}
	if b.Spec.NodeName != s.nodeName || b.Spec.NodeUID != s.uid {
		return fmt.Errorf("IPBlock %s is node %s's under UID %s, not this node's (%s, UID %s)", name, b.Spec.NodeName, b.Spec.NodeUID, s.nodeName, s.uid)
	}
	ann := u.GetAnnotations()
	if ann == nil {
		ann = map[string]string{}
	}
	n, _ := strconv.ParseUint(ann[ipamdlease.FenceLiftAnnotation], 10, 64) // absent or not a count: start again at 1
	ann[ipamdlease.FenceLiftAnnotation] = strconv.FormatUint(n+1, 10)
	u.SetAnnotations(ann)
	s.setStatus(func(st *Status) { st.FenceLiftWrites++ })
	wrote, err := blocks.Update(ctx, u, metav1.UpdateOptions{})
	if err != nil {
		return fmt.Errorf("update IPBlock %s at resourceVersion %s: %w", name, u.GetResourceVersion(), err)
	}
	if wrote.GetResourceVersion() == u.GetResourceVersion() {
		return fmt.Errorf("update IPBlock %s: the API server kept resourceVersion %s", name, u.GetResourceVersion())
	}
	return nil
}
