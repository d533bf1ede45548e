// Package fanout runs a function over a slice with a bounded number of
// calls in flight. Adapters use it for the per-sandbox status or inspect
// calls that follow one listing call, so that 100 pods cost about as much
// as 100/limit sequential round trips.
package fanout

import (
	"context"
	"sync"
)

// Each calls fn(ctx, i) for every i in [0, n) with at most limit calls
// running at once, and returns the first error. After an error, or when
// ctx ends, it starts no more calls; the ones already running see a
// cancelled context.
func Each(ctx context.Context, n, limit int, fn func(ctx context.Context, i int) error) error {
	if limit < 1 {
		limit = 1
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)

	var (
		wg       sync.WaitGroup
		once     sync.Once
		firstErr error
	)
	slots := make(chan struct{}, limit)
	for i := range n {
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		wg.Add(1)
		go func() {
			defer func() { <-slots; wg.Done() }()
			if err := fn(ctx, i); err != nil {
				once.Do(func() { firstErr = err; cancel(err) })
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return firstErr
	}
	return context.Cause(ctx)
}
