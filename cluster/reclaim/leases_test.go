package reclaim

import (
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
)

// The longest leaseDuration seen of a Lease outlives its delete and a
// later version without one or with a shorter one (issue 44, path 5);
// each change still restarts the quiet time.
func TestLeaseWatchKeepsTheLongestDuration(t *testing.T) {
	t0 := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakeClock(t0)
	w := newLeaseWatch(clk)
	lease := func(rv string, seconds *int32) *coordinationv1.Lease {
		return &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{ResourceVersion: rv}, Spec: coordinationv1.LeaseSpec{LeaseDurationSeconds: seconds}}
	}
	for i, step := range []struct {
		lease *coordinationv1.Lease
		want  LeaseSeen
	}{
		{nil, LeaseSeen{Since: t0}},
		{lease("1", ptr.To[int32](130)), LeaseSeen{Present: true, Since: t0.Add(10 * time.Second), Duration: 130 * time.Second}},
		{lease("2", ptr.To[int32](60)), LeaseSeen{Present: true, Since: t0.Add(20 * time.Second), Duration: 130 * time.Second}},
		{nil, LeaseSeen{Since: t0.Add(30 * time.Second), Duration: 130 * time.Second}},
		{nil, LeaseSeen{Since: t0.Add(30 * time.Second), Duration: 130 * time.Second}},
		{lease("5", nil), LeaseSeen{Present: true, Since: t0.Add(50 * time.Second), Duration: 130 * time.Second}},
	} {
		clk.SetTime(t0.Add(time.Duration(i) * 10 * time.Second))
		if got := w.observe("sandboxipam-ipamd-n1", step.lease); got != step.want {
			t.Fatalf("step %d: observed %+v, want %+v", i, got, step.want)
		}
	}
}
