package v1alpha1

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
)

// ErrNotABlockOfAPool: an IPBlock that is not a block of a known pool at
// its block size (or names no known pool). ipamd, the routes keeper and
// the cluster check act on no such block: they report it.
var ErrNotABlockOfAPool = errors.New("not a block of a known IPPool")

// Prefixes parses a family's CIDRs, the ones blocks are claimed from,
// masked; one that does not parse is left out (the CRD's rules refuse such
// a pool).
func (f PoolFamily) Prefixes() []netip.Prefix { return parsePrefixes(f.CIDRs) }

// AllPrefixes is Prefixes and the retiring CIDRs: every range the pool's
// blocks may lie in, draining ones included.
func (f PoolFamily) AllPrefixes() []netip.Prefix {
	return append(f.Prefixes(), parsePrefixes(f.RetiringCIDRs)...)
}

func parsePrefixes(cidrs []string) []netip.Prefix {
	var out []netip.Prefix
	for _, c := range cidrs {
		if p, err := netip.ParsePrefix(c); err == nil {
			out = append(out, p.Masked())
		}
	}
	return out
}

// HasBlock reports whether p is one of the pool's blocks: of a family's
// block size, inside one of its CIDRs or retiring CIDRs (a draining block
// is still the pool's: routed, and judged by the reclaimer).
func (s IPPoolSpec) HasBlock(p netip.Prefix) bool {
	for _, f := range s.Families() {
		if p.Bits() != f.BlockSize {
			continue
		}
		for _, c := range f.AllPrefixes() {
			if c.Addr().BitLen() == p.Addr().BitLen() && c.Bits() <= p.Bits() && c.Contains(p.Addr()) {
				return true
			}
		}
	}
	return false
}

// CheckBlock is nil when b is a block of the pool it names, found in
// pools by name; else an ErrNotABlockOfAPool naming why.
func CheckBlock(b IPBlock, pools map[string]IPPool) error {
	p, err := b.Spec.Prefix()
	if err != nil {
		return fmt.Errorf("IPBlock %s: %w: %w", b.Name, ErrNotABlockOfAPool, err)
	}
	pool, ok := pools[b.Spec.Pool]
	switch {
	case !ok:
		return fmt.Errorf("IPBlock %s: %w: IPPool %s does not exist", b.Name, ErrNotABlockOfAPool, b.Spec.Pool)
	case !pool.Spec.HasBlock(p):
		return fmt.Errorf("IPBlock %s: %w: %s is not inside IPPool %s's CIDRs at its block size", b.Name, ErrNotABlockOfAPool, p, b.Spec.Pool)
	}
	return nil
}

// Overlap is a CIDR of one pool that overlaps a CIDR of another: blocks
// of the two could overlap, so no node claims from either part.
type Overlap struct {
	Pool, CIDR, Other, OtherCIDR string
}

func (o Overlap) String() string {
	return fmt.Sprintf("IPPool %s's %s overlaps IPPool %s's %s", o.Pool, o.CIDR, o.Other, o.OtherCIDR)
}

// Overlaps lists every pair of CIDRs of two different pools that
// overlap, each pair once (the pool of smaller name first), in order.
func Overlaps(pools []IPPool) []Overlap {
	sorted := slices.Clone(pools)
	slices.SortFunc(sorted, func(a, b IPPool) int { return strings.Compare(a.Name, b.Name) })
	var out []Overlap
	for i, a := range sorted {
		for _, b := range sorted[i+1:] {
			for _, pa := range poolPrefixes(a.Spec) {
				for _, pb := range poolPrefixes(b.Spec) {
					if pa.Overlaps(pb) {
						out = append(out, Overlap{Pool: a.Name, CIDR: pa.String(), Other: b.Name, OtherCIDR: pb.String()})
					}
				}
			}
		}
	}
	return out
}

// Overlapping lists the CIDRs of pool name that overlap another pool's.
func Overlapping(name string, pools []IPPool) map[netip.Prefix]Overlap {
	out := map[netip.Prefix]Overlap{}
	for _, o := range Overlaps(pools) {
		switch name {
		case o.Pool:
			out[netip.MustParsePrefix(o.CIDR)] = o
		case o.Other:
			out[netip.MustParsePrefix(o.OtherCIDR)] = Overlap{Pool: o.Other, CIDR: o.OtherCIDR, Other: o.Pool, OtherCIDR: o.CIDR}
		}
	}
	return out
}

func poolPrefixes(s IPPoolSpec) []netip.Prefix {
	var out []netip.Prefix
	for _, f := range s.Families() {
		out = append(out, f.AllPrefixes()...)
	}
	return out
}
