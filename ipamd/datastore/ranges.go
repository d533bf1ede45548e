package datastore

import (
	"cmp"
	"fmt"
	"math"
	"net/netip"
	"slices"
	"time"

	"github.com/sandboxipam/sandboxipam/ipamd/datastore/allocator"
	"github.com/sandboxipam/sandboxipam/ipamd/datastore/state"
	"github.com/sandboxipam/sandboxipam/ipamd/ipsource"
)

// The pool is a sorted list of blocks (ipsource.Range), never a list of
// free addresses: memory and the checkpoint grow with what is taken
// (assigned, cooling, quarantined), never with the size of a block, so an
// IPv6 /64 costs what a /30 costs. An address of a block with no entry in
// s.addrs is free.
//
// Allocation is package allocator's pure walk: it skips taken addresses
// with one map lookup each (pickLocked).

// poolRange is one block of the pool.
type poolRange struct {
	r           ipsource.Range
	first, last netip.Addr
	exclude     map[netip.Addr]struct{}
	// size counts the usable addresses, saturating at MaxUint64.
	size uint64
	// retiring: nothing is handed out of the block, which leaves the
	// pool once nothing in it is held (see retire.go).
	retiring bool
}

func newPoolRange(r ipsource.Range) (*poolRange, error) {
	if !r.Prefix.IsValid() {
		return nil, fmt.Errorf("range: invalid prefix")
	}
	if r.Prefix.Addr().Is4In6() {
		return nil, fmt.Errorf("range %s: an IPv4-mapped IPv6 prefix; write it as IPv4", r.Prefix)
	}
	r.Prefix = r.Prefix.Masked()
	first, last := r.Bounds()
	if !r.Prefix.Contains(first) || !r.Prefix.Contains(last) || first.Compare(last) > 0 {
		return nil, fmt.Errorf("range %s: bounds %s to %s are not inside it", r.Prefix, first, last)
	}
	pr := &poolRange{r: r, first: first, last: last, exclude: make(map[netip.Addr]struct{}, len(r.Exclude))}
	for _, ip := range r.Exclude {
		if ip.Compare(first) >= 0 && ip.Compare(last) <= 0 {
			pr.exclude[ip] = struct{}{}
		}
	}
	pr.size = ipsource.Count(first, last, len(pr.exclude))
	return pr, nil
}

// contains reports whether ip is a usable address of the block.
func (p *poolRange) contains(ip netip.Addr) bool {
	if ip.Compare(p.first) < 0 || ip.Compare(p.last) > 0 {
		return false
	}
	_, excluded := p.exclude[ip]
	return !excluded
}

func (p *poolRange) address(ip netip.Addr) ipsource.Address {
	return ipsource.Address{IP: ip, Subnet: p.r.Subnet, Gateway: p.r.Gateway, Group: p.r.Group}
}

func (p *poolRange) family() string { return ipsource.Family(p.first) }

// single reports whether the block is one address added by AddAddresses.
func (p *poolRange) single() bool { return p.first == p.last }

func satAdd(a, b uint64) uint64 { return ipsource.SatAdd(a, b) }

// clampInt turns a saturating count into an int, saturating at MaxInt.
func clampInt(n uint64) int {
	if n > math.MaxInt {
		return math.MaxInt
	}
	return int(n)
}

// rangeIndexLocked returns the index of the block whose bounds hold ip,
// or -1.
func (s *Store) rangeIndexLocked(ip netip.Addr) int {
	i, _ := slices.BinarySearchFunc(s.ranges, ip, func(p *poolRange, ip netip.Addr) int {
		if p.first.Compare(ip) <= 0 {
			return -1
		}
		return 1
	})
	// i is the first block starting after ip.
	if i == 0 {
		return -1
	}
	if p := s.ranges[i-1]; ip.Compare(p.last) <= 0 && ip.BitLen() == p.first.BitLen() {
		return i - 1
	}
	return -1
}

// rangeForLocked returns the block ip is a usable address of, or nil.
func (s *Store) rangeForLocked(ip netip.Addr) *poolRange {
	i := s.rangeIndexLocked(ip)
	if i < 0 || !s.ranges[i].contains(ip) {
		return nil
	}
	return s.ranges[i]
}

// inPoolLocked reports whether ip may be handed out by the pool at all.
func (s *Store) inPoolLocked(ip netip.Addr) bool { return s.rangeForLocked(ip) != nil }

// addRangeLocked puts r in the pool, or updates the block of the same
// prefix; it refuses a block that overlaps another.
func (s *Store) addRangeLocked(r ipsource.Range) error {
	pr, err := newPoolRange(r)
	if err != nil {
		return err
	}
	i, found := slices.BinarySearchFunc(s.ranges, pr.first, func(p *poolRange, ip netip.Addr) int { return p.first.Compare(ip) })
	var old *poolRange
	switch {
	case found && s.ranges[i].r.Prefix == pr.r.Prefix:
		old = s.ranges[i]
	case found:
		return fmt.Errorf("range %s overlaps %s in the pool", pr.r.Prefix, s.ranges[i].r.Prefix)
	}
	if old == nil {
		if i > 0 && s.ranges[i-1].last.Compare(pr.first) >= 0 && s.ranges[i-1].last.BitLen() == pr.first.BitLen() {
			return fmt.Errorf("range %s overlaps %s in the pool", pr.r.Prefix, s.ranges[i-1].r.Prefix)
		}
		if i < len(s.ranges) && s.ranges[i].first.Compare(pr.last) <= 0 && s.ranges[i].first.BitLen() == pr.last.BitLen() {
			return fmt.Errorf("range %s overlaps %s in the pool", pr.r.Prefix, s.ranges[i].r.Prefix)
		}
		s.ranges = slices.Insert(s.ranges, i, pr)
	} else {
		if i+1 < len(s.ranges) && s.ranges[i+1].first.Compare(pr.last) <= 0 && s.ranges[i+1].first.BitLen() == pr.last.BitLen() {
			return fmt.Errorf("range %s overlaps %s in the pool", pr.r.Prefix, s.ranges[i+1].r.Prefix)
		}
		s.ranges[i] = pr
	}
	// Entries inside the old and the new bounds take the block's
	// Subnet, Gateway and Group, and (the assignment holding one) so
	// the state reads the same after a restart.
	lo, hi := pr.first, pr.last
	if old != nil {
		lo, hi = minAddr(lo, old.first), maxAddr(hi, old.last)
	}
	s.refreshEntriesLocked(lo, hi)
	return nil
}

func minAddr(a, b netip.Addr) netip.Addr {
	if a.Compare(b) <= 0 {
		return a
	}
	return b
}

func maxAddr(a, b netip.Addr) netip.Addr {
	if a.Compare(b) >= 0 {
		return a
	}
	return b
}

// refreshEntriesLocked gives every entry from lo to hi still in the pool
// the Address of its block after a block there changed (state.Repool).
// An entry that left the pool keeps its Address: whether an address is in
// the pool is the blocks' to say (rangeForLocked), never the entry's.
func (s *Store) refreshEntriesLocked(lo, hi netip.Addr) {
	var inside []netip.Addr
	if lo == hi {
		if _, ok := s.st.Entry(lo); ok {
			inside = append(inside, lo)
		}
	} else {
		for ip := range s.st.Addresses() {
			if ip.Compare(lo) >= 0 && ip.Compare(hi) <= 0 {
				inside = append(inside, ip)
			}
		}
	}
	now := s.now()
	for _, ip := range inside {
		if p := s.rangeForLocked(ip); p != nil {
			s.apply(state.Repool(p.address(ip), now))
		}
	}
}

// families lists the families of the pool's blocks, IPv4 first.
func (s *Store) familiesLocked() []string {
	var out []string
	for _, p := range s.ranges {
		if f := p.family(); !p.retiring && !slices.Contains(out, f) {
			out = append(out, f)
		}
	}
	slices.SortFunc(out, cmp.Compare[string])
	return out
}

// pickLocked chooses the next free address of family with the pure
// allocator (see package allocator): round-robin from the address handed
// out last, skipping what is held, cooling or quarantined.
func (s *Store) pickLocked(family string, now time.Time) (ipsource.Address, bool) {
	var fr []*poolRange
	var blocks []allocator.Block
	for _, p := range s.ranges {
		if p.family() == family && !p.retiring {
			fr = append(fr, p)
			blocks = append(blocks, allocator.Block{First: p.first, Last: p.last, Exclude: p.exclude})
		}
	}
	ip, i, ok := allocator.Pick(allocator.Pool{Blocks: blocks, Cursor: s.st.Cursor(family), Taken: s.st.TakenCount(),
		IsTaken: func(ip netip.Addr) bool { return s.st.Taken(ip, now) }})
	if !ok {
		return ipsource.Address{}, false
	}
	return fr[i].address(ip), true
}
