package pool

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/sandboxipam/sandboxipam/cluster/api/v1alpha1"
)

// probe visits every block of every CIDR exactly once, whatever the seed,
// and two seeds start in different places.
func TestProbeVisitsEveryBlockOnce(t *testing.T) {
	spec := v1alpha1.IPPoolSpec{IPv4: &v1alpha1.PoolFamily{CIDRs: []string{"198.18.0.0/24", "198.18.4.0/26"}, BlockSize: 28}}
	fams, err := families(spec)
	if err != nil || len(fams) != 1 {
		t.Fatalf("families = %v, %v", fams, err)
	}
	firsts := map[netip.Prefix]bool{}
	for _, seed := range []string{"node-1", "node-2", "node-3", "a-much-longer-node-name"} {
		seen := map[netip.Prefix]bool{}
		first := true
		for p := range fams[0].probe(probeOrder{name: seed}) {
			if first {
				firsts[p], first = true, false
			}
			if seen[p] || p.Bits() != 28 || p != p.Masked() || !fams[0].contains(p) {
				t.Fatalf("seed %s: block %s repeated or not a /28 of the pool", seed, p)
			}
			seen[p] = true
		}
		if len(seen) != 16+4 {
			t.Fatalf("seed %s: %d blocks visited, want 20", seed, len(seen))
		}
	}
	if len(firsts) < 2 {
		t.Errorf("every seed probes from the same block %v", firsts)
	}
}

// Nodes whose InternalIPs are consecutive start their probes at distinct
// blocks, as many as the pool has, so a cluster booting at once does not
// race for names; each order still visits every block once.
func TestProbeStartsAtTheNodesAddress(t *testing.T) {
	spec := v1alpha1.IPPoolSpec{IPv4: &v1alpha1.PoolFamily{CIDRs: []string{"198.18.0.0/24", "198.18.4.0/26"}, BlockSize: 28}}
	fams, err := families(spec)
	if err != nil {
		t.Fatal(err)
	}
	for _, base := range []string{"198.19.7.250", "fd00:5ca1::fff0"} {
		firsts := map[netip.Prefix]string{}
		for i := range 20 {
			addr := netip.MustParseAddr(base)
			for range i {
				addr = addr.Next()
			}
			name := fmt.Sprintf("node-%d", i)
			o := orderFor(name, nodeAt(name, addr.String()))
			if !o.hasIndex {
				t.Fatalf("%s at %s: no index", name, addr)
			}
			seen := map[netip.Prefix]bool{}
			for p := range fams[0].probe(o) {
				if len(seen) == 0 {
					if other, ok := firsts[p]; ok {
						t.Fatalf("%s at %s starts at %s, as %s does", name, addr, p, other)
					}
					firsts[p] = name
				}
				if seen[p] || !fams[0].contains(p) {
					t.Fatalf("%s: block %s repeated or not the pool's", name, p)
				}
				seen[p] = true
			}
			if len(seen) != 20 {
				t.Fatalf("%s: %d blocks visited, want 20", name, len(seen))
			}
		}
	}
}

// Nodes with consecutive addresses that each hold their first block find
// distinct free blocks for their second claim: their orders are one order
// shifted, so a scale-up where every node needs more does not race either.
func TestSecondClaimsOfNeighboursDoNotMeet(t *testing.T) {
	fams, err := families(v1alpha1.IPPoolSpec{IPv4: &v1alpha1.PoolFamily{CIDRs: []string{"198.18.0.0/24"}, BlockSize: 28}})
	if err != nil {
		t.Fatal(err)
	}
	orders := make([]probeOrder, 6)
	firsts := map[netip.Prefix]bool{}
	addr := netip.MustParseAddr("198.19.0.16")
	for i := range orders {
		orders[i] = orderFor(fmt.Sprintf("node-%d", i), nodeAt("n", addr.String()))
		addr = addr.Next()
		for p := range fams[0].probe(orders[i]) {
			firsts[p] = true
			break
		}
	}
	seconds := map[netip.Prefix]int{}
	for i, o := range orders {
		for p := range fams[0].probe(o) {
			if firsts[p] {
				continue
			}
			if j, ok := seconds[p]; ok {
				t.Fatalf("nodes %d and %d both try %s second", j, i, p)
			}
			seconds[p] = i
			break
		}
	}
	if len(firsts) != 6 || len(seconds) != 6 {
		t.Fatalf("%d first and %d second blocks, want 6 and 6", len(firsts), len(seconds))
	}
}

// A Node with no InternalIP (none yet, or only an ExternalIP) is ordered
// by its name's hash, as is a node the informer does not hold yet.
func TestProbeOrderWithoutAnInternalIP(t *testing.T) {
	n := nodeAt("node-1", "198.19.0.1")
	n.Status.Addresses[1].Type = corev1.NodeExternalIP
	for _, n := range []*corev1.Node{nil, n, nodeAt("node-1", "not-an-address")} {
		if o := orderFor("node-1", n); o.hasIndex || o.name != "node-1" {
			t.Errorf("order %+v, want the name's hash", o)
		}
	}
	if o := orderFor("node-1", nodeAt("node-1", "fd00::1:2:3:4")); o.index != 0x0001000200030004 {
		t.Errorf("IPv6 index %#x, want the interface identifier 0x1000200030004", o.index)
	}
}

func nodeAt(name, addr string) *corev1.Node {
	n := &corev1.Node{}
	n.Name = name
	n.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeHostName, Address: name}, {Type: corev1.NodeInternalIP, Address: addr}}
	return n
}

func TestFamiliesRejectsACIDRSmallerThanABlock(t *testing.T) {
	_, err := families(v1alpha1.IPPoolSpec{IPv6: &v1alpha1.PoolFamily{CIDRs: []string{"fd00::/126"}, BlockSize: 122}})
	if err == nil || !strings.Contains(err.Error(), "fd00::/126: smaller than a block (/122)") {
		t.Fatalf("families = %v, want an error naming the CIDR", err)
	}
}
