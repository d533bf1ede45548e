package clustercheck_test

import (
	"fmt"
	"net/netip"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/sandboxipam/sandboxipam/cluster/clustercheck"
)

// BenchmarkCompare judges a cluster of 1,000 nodes, each with two /26
// blocks and 30 pods: 2,000 blocks and 30,000 pods, with no finding.
func BenchmarkCompare(b *testing.B) {
	s := clustercheck.Snapshot{Pools: []clustercheck.Pool{{Name: "default", CIDRs: pfx("10.0.0.0/8")}}}
	base := netip.MustParseAddr("10.0.0.0").As4()
	for n := range 1000 {
		node := fmt.Sprintf("node-%d", n)
		s.Nodes = append(s.Nodes, clustercheck.Node{Name: node, UID: "uid-" + node})
		for k := range 2 {
			i := 2*n + k
			a := base
			a[1], a[2], a[3] = byte(i>>10), byte(i>>2), byte(i&3)<<6
			p := netip.PrefixFrom(netip.AddrFrom4(a), 26)
			s.Blocks = append(s.Blocks, clustercheck.Block{Name: fmt.Sprintf("b-%d", i), Pool: "default", NodeName: node, NodeUID: "uid-" + node, CIDR: p})
			for j := range 15 {
				ip := p.Addr()
				for range j + 1 {
					ip = ip.Next()
				}
				s.Pods = append(s.Pods, clustercheck.Pod{Namespace: "ns", Name: fmt.Sprintf("p-%d-%d", i, j), Node: node, Phase: corev1.PodRunning, IPs: []netip.Addr{ip}})
			}
		}
	}
	b.ResetTimer()
	for b.Loop() {
		if r := clustercheck.Compare(s); len(r.Findings) != 0 || r.Addresses != 30000 {
			b.Fatalf("findings %d, addresses %d", len(r.Findings), r.Addresses)
		}
	}
}
