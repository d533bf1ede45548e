package nodecheck

import (
	"fmt"
	"net/netip"
	"testing"

	"github.com/sandboxipam/sandboxipam/ipamd/hostlinks"
	"github.com/sandboxipam/sandboxipam/runtime"
)

// BenchmarkCompare: one check of an agreeing node with n pods (the
// snapshots already taken): what ipamctl check costs ipamd beyond the
// listing and the netlink dump.
func BenchmarkCompare(b *testing.B) {
	for _, n := range []int{250, 10_000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			in := Input{Node: &hostlinks.Snapshot{Links: map[string][]netip.Addr{}}, VethPrefix: "sbx", Now: t0}
			base := netip.MustParseAddr("10.0.0.0")
			ip := base
			for i := range n {
				ip = ip.Next()
				id := fmt.Sprintf("%064x", i)
				in.Assignments = append(in.Assignments, assignment(id, ip.String(), t0))
				in.Sandboxes = append(in.Sandboxes, runtime.Sandbox{ID: id, State: runtime.StateReady, IPs: []netip.Addr{ip}})
				in.Node.Links[link(id)] = []netip.Addr{ip}
			}
			b.ReportAllocs()
			for b.Loop() {
				if r := Compare(in); len(r.Disagreements) != 0 {
					b.Fatalf("disagreements %v", kinds(r))
				}
			}
		})
	}
}
