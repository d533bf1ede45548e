package conformance

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// resources records what a check creates so it can be released in reverse
// order when the check ends, whether it passed, failed or was interrupted
// (after csi-test's sanity Resources). It is safe for concurrent use: the
// scale and concurrency checks create pods from several goroutines.
type resources struct {
	mu    sync.Mutex
	items []*resource
}

// resource is one thing to release. A check may release it early (a pod the
// check itself removes); the final clean-up then leaves it alone.
type resource struct {
	name    string
	release func(ctx context.Context) error
	// pod marks a pod's removal, which depends on nothing else the run
	// made: releaseAll removes pods side by side.
	pod      bool
	once     sync.Once
	released error
}

// add records a resource and returns it so the check can release it early.
func (r *resources) add(name string, release func(ctx context.Context) error) *resource {
	item := &resource{name: name, release: release}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.items = append(r.items, item)
	return item
}

// addPod records the removal of a pod, which releaseAll may run alongside
// other pods' removals.
func (r *resources) addPod(name string, release func(ctx context.Context) error) *resource {
	item := r.add(name, release)
	item.pod = true
	return item
}

// Release releases the resource once; later calls return the first result.
func (item *resource) Release(ctx context.Context) error {
	item.once.Do(func() {
		if err := item.release(ctx); err != nil {
			item.released = fmt.Errorf("release %s: %w", item.name, err)
		}
	})
	return item.released
}

// releaseAll releases every resource not yet released and joins the
// errors: first the pods, DefaultCreateParallelism at a time (removing a
// run's pods one by one took most of a minute against Docker on a busy
// 2-core machine), then everything else newest first. It keeps going past
// a failure so that one stuck pod does not leak the rest.
func (r *resources) releaseAll(ctx context.Context) error {
	r.mu.Lock()
	items := r.items
	r.items = nil
	r.mu.Unlock()
	var pods, others []*resource
	for i := len(items) - 1; i >= 0; i-- {
		if items[i].pod {
			pods = append(pods, items[i])
		} else {
			others = append(others, items[i])
		}
	}
	errs := make([]error, len(pods), len(items))
	_ = forEachParallel(len(pods), func(i int) error {
		errs[i] = pods[i].Release(ctx)
		return nil
	})
	for _, item := range others {
		errs = append(errs, item.Release(ctx))
	}
	return errors.Join(errs...)
}
