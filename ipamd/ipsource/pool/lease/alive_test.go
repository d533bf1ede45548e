package lease_test

import (
	"net/netip"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/sandboxipam/sandboxipam/cluster/api/ipamdlease"
	"github.com/sandboxipam/sandboxipam/internal/clusterfixture"
	"github.com/sandboxipam/sandboxipam/ipamd/ipsource/pool/lease"
)

// The Lease records where ipamd answers the reclaimer's alive probe, and
// a renewer that answers nowhere removes a record left by an earlier one:
// the reclaimer must never ask an address this ipamd no longer answers on.
func TestRenewerRecordsAliveAddresses(t *testing.T) {
	env := clusterfixture.Start(t, t.TempDir())
	t.Cleanup(env.API.Stop)
	clk := clocktesting.NewFakeClock(time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC))
	renew := func(addrs ...netip.AddrPort) map[string]string {
		t.Helper()
		r, err := lease.New(env.Client, lease.Options{Namespace: "kube-system", Node: "node-a1", RenewInterval: 10 * time.Second,
			FenceAfter: 2 * time.Minute, Clock: clk, AliveAddresses: addrs})
		if err != nil {
			t.Fatal(err)
		}
		r.SetUID("uid-a1")
		if err := r.Renew(t.Context()); err != nil {
			t.Fatal(err)
		}
		l, err := env.Client.CoordinationV1().Leases("kube-system").Get(t.Context(), ipamdlease.IpamdLeaseName("node-a1"), metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return l.Annotations
	}
	ann := renew(netip.MustParseAddrPort("10.0.0.7:61682"), netip.MustParseAddrPort("[fd00::7]:61682"))
	if got := ann[ipamdlease.LeaseAddressesAnnotation]; got != "10.0.0.7:61682,[fd00::7]:61682" || ann[ipamdlease.LeaseNodeUIDAnnotation] != "uid-a1" {
		t.Fatalf("annotations %v", ann)
	}
	if ann := renew(); len(ann) != 1 || ann[ipamdlease.LeaseNodeUIDAnnotation] != "uid-a1" {
		t.Fatalf("annotations after a renewer that answers nowhere: %v", ann)
	}
}
