package pool

import (
	"context"
	"log/slog"
	"sync"
)

// fence is the pool source's side of self-fencing (package lease): the
// Renewer raises it when this ipamd's Lease lapses, and a pass lifts it
// only after the Lease is fresh again and every block has been read from
// the API server itself (guard, fresh), so a block reclaimed meanwhile
// retires and is reported before any ADD could get an address of it.
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

// liftAfterReread lifts raise gen once the fresh reads all succeeded.
func (s *Source) liftAfterReread(ctx context.Context, gen uint64, ok bool) {
	if !ok || ctx.Err() != nil {
		return
	}
	if s.fence.lift(gen) {
		s.log.Warn("fence lifted: this ipamd's Lease is renewed and its blocks were read again from the API server",
			slog.String("lease", s.renewer.Name()), slog.Any("blocks", s.current))
	}
}
