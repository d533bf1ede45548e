package conformance

import (
	"context"
	"errors"
	"slices"
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
