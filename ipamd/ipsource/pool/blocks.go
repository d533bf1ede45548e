package pool

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"iter"
	"math/big"
	"net/netip"

	corev1 "k8s.io/api/core/v1"

	"github.com/sandboxipam/sandboxipam/cluster/api/v1alpha1"
	"github.com/sandboxipam/sandboxipam/ipamd/ipsource"
)

// family is one family of an IPPool, parsed: the CIDRs blocks are cut
// from and the blocks' prefix length.
type family struct {
	name      string // "ipv4" or "ipv6"
	cidrs     []netip.Prefix
	blockBits int
}

// families parses the IPPool's spec; a CIDR that does not parse, or is
// smaller than a block, is an error naming it.
func families(spec v1alpha1.IPPoolSpec) ([]family, error) {
	var out []family
	for i, f := range spec.Families() {
		fam := family{blockBits: f.BlockSize}
		for j, text := range f.CIDRs {
			p, err := netip.ParsePrefix(text)
			if err != nil {
				return nil, fmt.Errorf("spec family %d cidrs[%d] %q: %w", i, j, text, err)
			}
			p = p.Masked()
			if p.Bits() > fam.blockBits || fam.blockBits > p.Addr().BitLen() {
				return nil, fmt.Errorf("spec cidr %s: smaller than a block (/%d)", p, fam.blockBits)
			}
			fam.name = ipsource.Family(p.Addr())
			fam.cidrs = append(fam.cidrs, p)
		}
		if len(fam.cidrs) > 0 {
			out = append(out, fam)
		}
	}
	return out, nil
}

// contains reports whether block b is one of f's blocks.
func (f family) contains(b netip.Prefix) bool {
	if b.Bits() != f.blockBits {
		return false
	}
	for _, c := range f.cidrs {
		if c.Overlaps(b) {
			return true
		}
	}
	return false
}

// probeOrder says where a node's probe of a pool begins. Nodes that
// claim at once (a cluster booting, a node pool scaled up) race for a
// block only when their probes start at the same place, so the start
// comes from what is unique per node and dense in most clusters: its
// Node's first InternalIP, read as a number. Nodes in one subnet then
// start at consecutive blocks and never collide while the pool has a
// block per node (on 1,000 nodes a hash of the name, which collides as a
// birthday draw does, gave 380 AlreadyExists for 1,000 first claims;
// BENCHMARKS.md). A node without an InternalIP starts at a hash of its
// name, and walks with a stride from that hash; nodes with an address all
// walk with one stride (see probe).
type probeOrder struct {
	name string
	// index is the node address's low 64 bits; valid when hasIndex.
	index    uint64
	hasIndex bool
}

// orderFor is node n's probe order; n may be nil (not yet in the
// informer), which leaves the name's hash.
func orderFor(name string, n *corev1.Node) probeOrder {
	o := probeOrder{name: name}
	if n == nil {
		return o
	}
	for _, a := range n.Status.Addresses {
		if a.Type != corev1.NodeInternalIP {
			continue
		}
		ip, err := netip.ParseAddr(a.Address)
		if err != nil {
			continue
		}
		o.index, o.hasIndex = lowBits(ip.Unmap()), true
		return o
	}
	return o
}

// lowBits is an IPv4 address as a number, or an IPv6 address's interface
// identifier (its low 64 bits).
func lowBits(ip netip.Addr) uint64 {
	if ip.Is4() {
		a := ip.As4()
		return uint64(binary.BigEndian.Uint32(a[:]))
	}
	a := ip.As16()
	return binary.BigEndian.Uint64(a[8:])
}

// probe yields every block of f once, in o's order: the CIDRs rotated by
// the start, inside each a start and an odd stride (a CIDR holds a power
// of two of blocks, so an odd stride visits each).
func (f family) probe(o probeOrder) iter.Seq[netip.Prefix] {
	h := fnv.New64a()
	h.Write([]byte(f.name + "/" + o.name))
	s1 := h.Sum64()
	h.Write([]byte("stride"))
	s2 := h.Sum64()
	return func(yield func(netip.Prefix) bool) {
		n := len(f.cidrs)
		first, within := int(s1%uint64(n)), s1
		if o.hasIndex {
			first, within = f.locate(o.index)
		}
		for k := range n {
			c := f.cidrs[(first+k)%n]
			count := f.blocksIn(c)
			start, stride := within&(count-1), (s2|1)&(count-1)
			if o.hasIndex {
				// One stride for every node: each node's order is the
				// others' shifted by its index, so nodes at the same
				// step of their probes never meet. Half the CIDR plus
				// one takes a node's second claim to the half its
				// neighbours' first claims left free.
				stride = (count/2 + 1) | 1 // odd: visits every block
			}
			if count == 1 {
				stride = 1
			}
			for j := range count {
				if !yield(f.nth(c, (start+j*stride)&(count-1))) {
					return
				}
			}
		}
	}
}

// blocksIn is how many blocks CIDR c holds (capped at 2^62).
func (f family) blocksIn(c netip.Prefix) uint64 {
	return uint64(1) << min(f.blockBits-c.Bits(), 62)
}

// locate places index among the family's blocks, its CIDRs' blocks taken
// one after the other: the CIDR (its position in f.cidrs) and the block
// within it. Consecutive indexes get distinct blocks, as many as the
// family has.
func (f family) locate(index uint64) (cidr int, block uint64) {
	var total uint64
	for _, c := range f.cidrs {
		total += f.blocksIn(c) // at most 2^62 per CIDR: IPv6 sums may wrap, which only reorders
	}
	if total == 0 {
		return 0, index
	}
	pos := index % total
	for i, c := range f.cidrs {
		if n := f.blocksIn(c); pos < n {
			return i, pos
		}
		pos -= f.blocksIn(c)
	}
	return 0, pos
}

// nth is block i of cidr c.
func (f family) nth(c netip.Prefix, i uint64) netip.Prefix {
	base := new(big.Int).SetBytes(c.Addr().AsSlice())
	off := new(big.Int).Lsh(new(big.Int).SetUint64(i), uint(c.Addr().BitLen()-f.blockBits))
	b := base.Add(base, off).FillBytes(make([]byte, c.Addr().BitLen()/8))
	a, _ := netip.AddrFromSlice(b)
	return netip.PrefixFrom(a, f.blockBits)
}
