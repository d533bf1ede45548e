package reconcile_test

import (
	"context"
	"errors"
	"maps"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/sandboxipam/sandboxipam/internal/testadapter"
	"github.com/sandboxipam/sandboxipam/ipamd/datastore"
	"github.com/sandboxipam/sandboxipam/runtime"
)

// The first case, with the default wiring: five pods wired by
// another main plugin (sandboxipam as IPAM only) are listed Ready without
// IPs after the state was lost. No pod link is no evidence for them, so a
// minute past every grace ipamd still hands out nothing and names each;
// once the runtime reports one's IP and the other's DEL arrives, the pool
// is proven and the next address is one no live pod holds.
func TestIPAMOnlyPodsWithoutIPsStayUnaccountedPastEveryGrace(t *testing.T) {
	n := newNodeWith(t, true)
	pods := []runtime.Sandbox{sandbox("ipam-1", runtime.StateReady), sandbox("ipam-2", runtime.StateReady), sandbox("ipam-3", runtime.StateNotReady)}
	n.setRuntime(testadapter.State{Sandboxes: pods})
	r := n.reconcilerOnNode(fakeNode{})
	n.clock.Set(t0.Add(time.Minute))
	res := n.pass(r)
	if !res.Unproven || len(res.Unaccounted) != 3 {
		t.Fatalf("pass a minute after start = %+v; want ipam-1, ipam-2 and ipam-3 unaccounted", res)
	}
	for i, id := range []string{"ipam-1", "ipam-2", "ipam-3"} {
		if !strings.HasPrefix(res.Unaccounted[i], "sandbox "+id+" ") || !strings.Contains(res.Unaccounted[i], "podLinks.podWiring is not plugin") {
			t.Errorf("Unaccounted[%d] = %q; want it to name %s and podLinks.podWiring", i, res.Unaccounted[i], id)
		}
	}
	_, err := n.store.Assign(context.Background(), datastore.Key{Network: "pods", SandboxID: "new", IfName: "eth0"}, datastore.Pod{})
	if !errors.Is(err, datastore.ErrUnproven) || !strings.Contains(err.Error(), "sandbox ipam-2") {
		t.Fatalf("Assign = %v; want ErrUnproven naming ipam-2", err)
	}
	// The runtime catches up with ipam-1's address; ipam-2 is DELed (its
	// main plugin tears it down); an operator releases the stopped ipam-3.
	pods[0].IPs = []netip.Addr{netip.MustParseAddr("198.18.0.1")}
	n.setRuntime(testadapter.State{Sandboxes: pods})
	for _, id := range []string{"ipam-2", "ipam-3"} {
		reason := datastore.ReasonCNIDel
		if id == "ipam-3" {
			reason = datastore.ReasonOperator
		}
		if _, _, err := n.store.ReleaseFor(context.Background(), datastore.Key{Network: "pods", SandboxID: id, IfName: "eth0"}, reason); err != nil {
			t.Fatal(err)
		}
	}
	if res := n.pass(r); res.Unproven || res.Adopted != 1 {
		t.Fatalf("pass once accounted for = %+v; want proven, ipam-1 adopted", res)
	}
	if got := released(n.store.Assignments()); !maps.Equal(got, map[string]string{"ipam-1": "198.18.0.1"}) {
		t.Fatalf("assignments %v", got)
	}
	n.assign("new", "198.18.0.2")
}

// With the plugin known to wire every pod, the same listing is proven
// once LinkGrace has passed: a pod without its link holds nothing.
func TestWiredPodsWithoutLinksHoldNothingAfterTheGrace(t *testing.T) {
	n := newNodeWith(t, true)
	n.setRuntime(testadapter.State{Sandboxes: []runtime.Sandbox{sandbox("wired-1", runtime.StateReady), sandbox("wired-2", runtime.StateNotReady)}})
	r := n.wiredOnNode(fakeNode{})
	n.clock.Set(t0.Add(time.Minute))
	if res := n.pass(r); res.Unproven || res.Adopted != 0 {
		t.Fatalf("pass = %+v; want proven, nothing adopted", res)
	}
	n.assign("new", "198.18.0.1")
}
