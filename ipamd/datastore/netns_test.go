package datastore_test

import (
	"context"
	"testing"

	"github.com/sandboxipam/sandboxipam/ipamd/datastore"
)

// The pod's network namespace, as its ADD named and identified it,
// survives a restart with the assignment; a repeated ADD keeps the
// first one's; an ADD without one records none.
func TestAssignFromKeepsTheNetNSAcrossRestarts(t *testing.T) {
	f := newFixture(t, "198.18.0.0/29")
	s := f.open()
	ctx := context.Background()
	key := datastore.Key{Network: "pods", SandboxID: "3f1c9a7e", IfName: "eth0"}
	ns := datastore.NetNS{Path: "/var/run/netns/cni-3f1c", Dev: 4, Ino: 4026532173}
	origin := datastore.Origin{Wiring: datastore.WiringIPAMOnly, NetNS: ns}
	if a, err := s.AssignFrom(ctx, key, datastore.Pod{Name: "web-0"}, origin); err != nil || a.NetNS != ns || a.Address.IP.String() != "198.18.0.1" {
		t.Fatalf("AssignFrom = %+v, %v", a, err)
	}
	again := datastore.Origin{NetNS: datastore.NetNS{Path: "/proc/4242/ns/net"}}
	if a, err := s.AssignFrom(ctx, key, datastore.Pod{Name: "web-0"}, again); err != nil || a.NetNS != ns {
		t.Fatalf("repeated AssignFrom = %+v, %v; want the first ADD's namespace", a, err)
	}
	bare := datastore.Key{Network: "pods", SandboxID: "77d0", IfName: "eth0"}
	if _, err := s.Assign(ctx, bare, datastore.Pod{}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = f.open()
	if a, ok := s.Lookup(key); !ok || a.NetNS != ns || a.Wiring != datastore.WiringIPAMOnly || !a.NetNS.Identified() {
		t.Fatalf("after a restart: %+v, %v; want namespace %+v", a, ok, ns)
	}
	if a, ok := s.Lookup(bare); !ok || a.NetNS != (datastore.NetNS{}) {
		t.Fatalf("after a restart: %+v, %v; want no namespace", a, ok)
	}
}
