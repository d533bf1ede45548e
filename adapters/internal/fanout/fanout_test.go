package fanout_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/sandboxipam/sandboxipam/adapters/internal/fanout"
)

func TestEachCallsEveryIndexWithinTheLimit(t *testing.T) {
	const n, limit = 100, 4
	var running, peak atomic.Int32
	seen := make([]atomic.Bool, n)
	err := fanout.Each(context.Background(), n, limit, func(_ context.Context, i int) error {
		now := running.Add(1)
		defer running.Add(-1)
		for {
			old := peak.Load()
			if now <= old || peak.CompareAndSwap(old, now) {
				break
			}
		}
		seen[i].Store(true)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for i := range seen {
		if !seen[i].Load() {
			t.Errorf("index %d never called", i)
		}
	}
	if peak.Load() > limit {
		t.Errorf("%d calls in flight, limit %d", peak.Load(), limit)
	}
}

func TestEachReturnsTheFirstErrorAndStops(t *testing.T) {
	boom := errors.New("boom")
	var calls atomic.Int32
	err := fanout.Each(context.Background(), 1000, 1, func(_ context.Context, i int) error {
		calls.Add(1)
		if i == 3 {
			return boom
		}
		return nil
	})
	if !errors.Is(err, boom) {
		t.Errorf("error = %v, want boom", err)
	}
	if calls.Load() > 5 {
		t.Errorf("%d calls after the error at index 3", calls.Load())
	}
}

func TestEachHonoursACancelledContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := fanout.Each(ctx, 10, 2, func(context.Context, int) error { return nil })
	if !errors.Is(err, context.Canceled) {
		t.Errorf("error = %v, want context.Canceled", err)
	}
}
