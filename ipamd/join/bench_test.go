package join

import (
	"fmt"
	"net/netip"
	"testing"

	"github.com/sandboxipam/sandboxipam/runtime"
)

// BenchmarkJoin10000 joins 10,000 assignments with a listing of the same
// 10,000 sandboxes and their 10,000 pod links, as a reconcile pass of
// BenchmarkReconcile10000 does twice and the datastore's proof once.
func BenchmarkJoin10000(b *testing.B) {
	in := Input{VethPrefix: "sbx", Links: map[string][]netip.Addr{}}
	ip := netip.MustParseAddr("198.18.0.1")
	for i := range 10000 {
		id := fmt.Sprintf("%064x", i)
		in.Assignments = append(in.Assignments, Assignment{Network: "pods", SandboxID: id, IfName: "eth0", IPs: []netip.Addr{ip}})
		in.Sandboxes = append(in.Sandboxes, runtime.Sandbox{ID: id, State: runtime.StateReady, IPs: []netip.Addr{ip}})
		in.Links[veth(id)] = []netip.Addr{ip}
		ip = ip.Next()
	}
	b.ReportAllocs()
	for b.Loop() {
		if rows := Join(in).Addresses(); len(rows) != 10000 || rows[0].Class != Agreed {
			b.Fatalf("%d rows", len(rows))
		}
	}
}
