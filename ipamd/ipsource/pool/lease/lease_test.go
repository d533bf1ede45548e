package lease_test

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/sandboxipam/sandboxipam/cluster/api/ipamdlease"
	"github.com/sandboxipam/sandboxipam/internal/clusterfixture"
	"github.com/sandboxipam/sandboxipam/ipamd/ipsource/pool/lease"
)

// The Renewer against a real API server: the Lease it writes names the
// node and its UID and says how long ipamd may still hand out addresses
// after a renew; a write by someone else makes the next renew fail on
// the resourceVersion and the one after read the Lease again; Fresh
// turns false only once fenceAfter has passed on the Renewer's own clock
// since the last successful renew was sent (renewTime is not read).
func TestRenewer(t *testing.T) {
	env := clusterfixture.Start(t, t.TempDir())
	t.Cleanup(env.API.Stop)
	t0 := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakeClock(t0)
	r, err := lease.New(env.Client, lease.Options{Namespace: "kube-system", Node: "node-l1", RenewInterval: 10 * time.Second,
		FenceAfter: 2 * time.Minute, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	if r.Fresh() {
		t.Fatal("fresh before a first renew")
	}
	r.SetUID("uid-l1")
	if err := r.Renew(t.Context()); err != nil {
		t.Fatal(err)
	}
	leases := env.Client.CoordinationV1().Leases("kube-system")
	l, err := leases.Get(t.Context(), ipamdlease.IpamdLeaseName("node-l1"), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if *l.Spec.HolderIdentity != "node-l1" || l.Annotations[ipamdlease.LeaseNodeUIDAnnotation] != "uid-l1" ||
		*l.Spec.LeaseDurationSeconds != 130 || !l.Spec.RenewTime.Time.Equal(t0) || l.Name != "sandboxipam-ipamd-node-l1" {
		t.Fatalf("Lease %+v", l)
	}

	// Someone else writes the Lease: the renew after fails on the stale
	// resourceVersion, the next reads it again and succeeds.
	l.Spec.HolderIdentity = new(string)
	if _, err := leases.Update(t.Context(), l, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	clk.Step(10 * time.Second)
	if err := r.Renew(t.Context()); err == nil {
		t.Fatal("a renew over a Lease written by someone else succeeded")
	}
	clk.Step(10 * time.Second)
	if err := r.Renew(t.Context()); err != nil {
		t.Fatalf("the renew after a conflict: %v", err)
	}
	if l, err = leases.Get(t.Context(), l.Name, metav1.GetOptions{}); err != nil || *l.Spec.HolderIdentity != "node-l1" {
		t.Fatalf("Lease after the conflict %+v, %v", l, err)
	}

	// Fresh until fenceAfter past the last successful renew (t0+20s).
	clk.Step(2 * time.Minute)
	if !r.Fresh() {
		t.Fatal("not fresh exactly fenceAfter after the last renew")
	}
	clk.Step(time.Nanosecond)
	if r.Fresh() {
		t.Fatal("fresh past fenceAfter after the last renew")
	}
}
