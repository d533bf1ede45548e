package pool

import (
	"fmt"
	"hash/fnv"
	"iter"
	"math/big"
	"net/netip"

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

// probe yields every block of f once, in an order of its own for seed:
// the CIDRs rotated by the seed, inside each a start and an odd stride
// from the seed (a CIDR holds a power of two of blocks, so an odd stride
// visits each). Nodes with different seeds start in different places, so
// concurrent claims rarely race for one name.
func (f family) probe(seed string) iter.Seq[netip.Prefix] {
	h := fnv.New64a()
	h.Write([]byte(f.name + "/" + seed))
	s1 := h.Sum64()
	h.Write([]byte("stride"))
	s2 := h.Sum64()
	return func(yield func(netip.Prefix) bool) {
		n := len(f.cidrs)
		for k := range n {
			c := f.cidrs[(int(s1%uint64(n))+k)%n]
			shift := min(f.blockBits-c.Bits(), 62)
			count := uint64(1) << shift
			start, stride := s1&(count-1), (s2|1)&(count-1)
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

// nth is block i of cidr c.
func (f family) nth(c netip.Prefix, i uint64) netip.Prefix {
	base := new(big.Int).SetBytes(c.Addr().AsSlice())
	off := new(big.Int).Lsh(new(big.Int).SetUint64(i), uint(c.Addr().BitLen()-f.blockBits))
	b := base.Add(base, off).FillBytes(make([]byte, c.Addr().BitLen()/8))
	a, _ := netip.AddrFromSlice(b)
	return netip.PrefixFrom(a, f.blockBits)
}
