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
	name     string
	release  func(ctx context.Context) error
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

// Release releases the resource once; later calls return the first result.
func (item *resource) Release(ctx context.Context) error {
	item.once.Do(func() {
		if err := item.release(ctx); err != nil {
			item.released = fmt.Errorf("release %s: %w", item.name, err)
		}
	})
	return item.released
}

// releaseAll releases every resource not yet released, newest first, and
// joins the errors. It keeps going past a failure so that one stuck pod does
// not leak the rest.
func (r *resources) releaseAll(ctx context.Context) error {
	r.mu.Lock()
	items := r.items
	r.items = nil
	r.mu.Unlock()
	var errs []error
	for i := len(items) - 1; i >= 0; i-- {
		if err := items[i].Release(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
