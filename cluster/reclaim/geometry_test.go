package reclaim_test

import (
	"context"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/sandboxipam/sandboxipam/cluster/api/v1alpha1"
	"github.com/sandboxipam/sandboxipam/internal/testsupport"
)

// A block that is no block of a known pool (its pool missing, or not the
// pool's block size) is never judged nor reclaimed, though its Node is
// gone and it holds no pod: each pass names it as an error (issue 37,
// item 3).
func TestBlocksOfNoPoolAreNeverReclaimed(t *testing.T) {
	env := apiServer(t)
	missing := env.Block(t, "nowhere", "10.99.0.0/26", "geo-ghost", "geo-ghost-uid")
	wrong := env.Block(t, "default", "198.18.200.0/24", "geo-ghost", "geo-ghost-uid")
	ctx := t.Context()
	t.Cleanup(func() {
		// t.Context() is cancelled before cleanups run: without this the
		// blocks outlived the test and failed the next one's pass.
		ctx := context.WithoutCancel(ctx)
		for _, b := range []v1alpha1.IPBlock{missing, wrong} {
			if err := env.Dynamic.Resource(v1alpha1.IPBlockResource).Delete(ctx, b.Name, metav1.DeleteOptions{}); err != nil {
				t.Errorf("cleanup: %v", err)
			}
		}
	})
	clk := clocktesting.NewFakeClock(t0)
	r := newReclaimer(t, env, testConfig(time.Minute), "reclaimer-geo", clk, &testsupport.Buffer{}, nil)
	if err := r.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"IPBlock 10.99.0.0-26: not a block of a known IPPool: IPPool nowhere does not exist: never reclaimed",
		"IPBlock 198.18.200.0-24: not a block of a known IPPool: 198.18.200.0/24 is not inside IPPool default's CIDRs at its block size: never reclaimed",
	}
	for range 3 {
		p := runOnce(t, r)
		for _, b := range []string{missing.Name, wrong.Name} {
			if _, judged := p.Verdict(b); judged || slices.Contains(p.Reclaimed, b) {
				t.Fatalf("block %s judged or reclaimed: %+v", b, p)
			}
		}
		for _, w := range want {
			if !slices.Contains(p.Errors, w) {
				t.Fatalf("pass errors %q, want %q among them", p.Errors, w)
			}
		}
		clk.Step(2 * time.Minute)
	}
}
