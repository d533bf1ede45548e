package conformance

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
)

func TestResourcesReleaseNewestFirstOnce(t *testing.T) {
	var order []string
	var res resources
	record := func(name string, err error) func(context.Context) error {
		return func(context.Context) error {
			order = append(order, name)
			return err
		}
	}
	res.add("pod a", record("a", nil))
	early := res.add("pod b", record("b", nil))
	res.add("pod c", record("c", errors.New("stuck")))
	res.add("adapter", record("adapter", nil))

	if err := early.Release(t.Context()); err != nil {
		t.Fatal(err)
	}
	err := res.releaseAll(t.Context())
	if got, want := order, []string{"b", "adapter", "c", "a"}; !slices.Equal(got, want) {
		t.Errorf("release order = %v, want %v", got, want)
	}
	if err == nil || err.Error() != "release pod c: stuck" {
		t.Errorf("releaseAll error = %v, want %q", err, "release pod c: stuck")
	}
	if err := res.releaseAll(t.Context()); err != nil {
		t.Errorf("second releaseAll = %v, want nil", err)
	}
	if len(order) != 4 {
		t.Errorf("resources released again: %v", order)
	}
}

// TestResourcesReleasePodsSideBySide: every pod's removal starts before any
// ends (each waits for all the others to start), and the rest goes after
// the pods, newest first, once each.
func TestResourcesReleasePodsSideBySide(t *testing.T) {
	const pods = 4
	var started sync.WaitGroup
	started.Add(pods)
	var mu sync.Mutex
	var order []string
	var res resources
	res.add("directory", func(context.Context) error {
		mu.Lock()
		defer mu.Unlock()
		order = append(order, "directory")
		return nil
	})
	for i := range pods {
		res.addPod(fmt.Sprintf("pod %d", i), func(ctx context.Context) error {
			started.Done()
			started.Wait() // deadlocks, and the test times out, if pods go one by one
			mu.Lock()
			defer mu.Unlock()
			order = append(order, "pod")
			return nil
		})
	}
	res.add("adapter", func(context.Context) error {
		mu.Lock()
		defer mu.Unlock()
		order = append(order, "adapter")
		return nil
	})
	if err := res.releaseAll(t.Context()); err != nil {
		t.Fatal(err)
	}
	if want := []string{"pod", "pod", "pod", "pod", "adapter", "directory"}; !slices.Equal(order, want) {
		t.Errorf("release order = %v, want %v", order, want)
	}
}
