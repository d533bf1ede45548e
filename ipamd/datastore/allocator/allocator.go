// Package allocator picks the next free address of a pool kept as blocks:
// a pure function of the blocks, the cursor and what is taken, with no
// I/O, no clock and no lock (ipamd/datastore calls it under its own, with
// "taken" meaning held, cooling or quarantined).
//
// The pool is a sorted list of blocks, never a list of free addresses, so
// an IPv6 /64 costs what a /30 costs. Pick walks round-robin from the
// address after the cursor (the one handed out last), wrapping around:
// walking on rather than taking the lowest free address keeps a
// just-cooled address from being reused first, and is deterministic given
// the state. Each address skipped is taken or excluded, so a walk that
// finds nothing after Taken+excluded+1 steps has visited every address:
// the pool is exhausted, and Pick says so without walking a /64.
//
// See docs/architecture.md (the life of an ADD) for where it is called.
package allocator

import (
	"net/netip"
	"slices"
)

// Block is one block of the pool: its usable bounds and the addresses
// inside them it never hands out.
type Block struct {
	First, Last netip.Addr
	Exclude     map[netip.Addr]struct{}
}

// Pool is what Pick walks.
type Pool struct {
	// Blocks are one family's blocks, sorted and not overlapping.
	Blocks []Block
	// Cursor is the address handed out last; an invalid one, or one of
	// another family, starts at the first block.
	Cursor netip.Addr
	// IsTaken reports whether an address is not free (held, cooling or
	// quarantined); Taken bounds how many addresses it says so of.
	IsTaken func(netip.Addr) bool
	Taken   int
}

// Pick returns the first free address after the cursor and the index of
// its block; false when every address is taken or excluded.
func Pick(p Pool) (netip.Addr, int, bool) {
	fr := p.Blocks
	if len(fr) == 0 {
		return netip.Addr{}, 0, false
	}
	idx, start := startAt(fr, p.Cursor)
	limit := p.Taken + 1
	for _, b := range fr {
		limit += len(b.Exclude)
	}
	steps := 0
	for k := 0; k <= len(fr); k++ {
		i := (idx + k) % len(fr)
		b := fr[i]
		from, to := b.First, b.Last
		switch {
		case k == 0:
			from = start
		case k == len(fr):
			// Back in the first block: the part before where the walk
			// started.
			if start == b.First {
				return netip.Addr{}, 0, false
			}
			to = start.Prev()
		}
		for ip := from; ; ip = ip.Next() {
			if _, excluded := b.Exclude[ip]; !excluded && !p.IsTaken(ip) {
				return ip, i, true
			}
			if steps++; steps > limit {
				return netip.Addr{}, 0, false
			}
			if ip == to {
				break
			}
		}
	}
	return netip.Addr{}, 0, false
}

// startAt returns the block and address a walk starts at: just after the
// cursor, in the first block that ends after it.
func startAt(fr []Block, cursor netip.Addr) (int, netip.Addr) {
	if !cursor.IsValid() || cursor.BitLen() != fr[0].First.BitLen() {
		return 0, fr[0].First
	}
	idx, _ := slices.BinarySearchFunc(fr, cursor, func(b Block, ip netip.Addr) int {
		if b.Last.Compare(ip) <= 0 {
			return -1
		}
		return 1
	})
	switch {
	case idx == len(fr):
		return 0, fr[0].First
	case fr[idx].First.Compare(cursor) <= 0:
		// Inside the block, before its last address.
		return idx, cursor.Next()
	}
	return idx, fr[idx].First
}
