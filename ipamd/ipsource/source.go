// Package ipsource is where ipamd's addresses come from. A Source fills and
// trims the datastore's pool; the datastore alone decides which free address
// a pod gets, so a Source never sees the CNI ADD/DEL path.
//
// Four sources ship: static (CIDRs from config, one node's or per node,
// package ipsource/static), podCIDR (the Node's spec.podCIDRs from the
// Kubernetes API, package ipsource/podcidr, which keeps its record in the
// checkpoint and so works through the datastore rather than Pool alone),
// pool (blocks claimed from a cluster IPPool through IPBlock objects,
// package ipsource/pool, recorded the same way) and aws (secondary
// private IPs of ENIs, package ipsource/aws).
//
// See docs/architecture.md for where this package sits and the life of an
// ADD, a DEL, a reconcile pass and a restart through the daemon.
package ipsource

import (
	"context"
	"math"
	"math/bits"
	"net/netip"
	"slices"
)

// Address is one address the pool may hand to a pod.
type Address struct {
	// IP is the pod address.
	IP netip.Addr
	// Subnet is the network the address lives in; its length is the
	// prefix length reported to the CNI plugin.
	Subnet netip.Prefix
	// Gateway is the next hop for the pod's default route; zero when the
	// CNI plugin should route via its host-side veth.
	Gateway netip.Addr
	// Group names where the address comes from: "static", or an ENI ID.
	// Sources use it to trim one group (one ENI) at a time.
	Group string
}

// Range is a block of pool addresses: every address from First to Last
// of Prefix except those in Exclude. The pool keeps a block as such, never
// as a list of its addresses, so an IPv6 /64 costs what a /30 costs.
type Range struct {
	// Prefix is the block as the source knows it: a configured CIDR, a
	// delegated prefix, or one address (a /32 or /128).
	Prefix netip.Prefix
	// First and Last bound the usable addresses; zero means the first and
	// last address of Prefix. A source puts its rules here: the static
	// source leaves out an IPv4 subnet's network and broadcast addresses.
	// One rule is every source's, applied by Bounds: an IPv6 block never
	// starts at its subnet's subnet-router anycast address.
	First, Last netip.Addr
	// Exclude lists addresses of the block never handed out: gateways
	// and reserved addresses.
	Exclude []netip.Addr
	// Subnet, Gateway and Group are those of every Address of the block.
	Subnet  netip.Prefix
	Gateway netip.Addr
	Group   string
}

// Bounds returns First and Last, defaulted from Prefix, and past the
// subnet-router anycast address when the block would start at it.
func (r Range) Bounds() (first, last netip.Addr) {
	first, last = r.First, r.Last
	if !first.IsValid() {
		first = r.Prefix.Masked().Addr()
	}
	if !last.IsValid() {
		last = LastAddr(r.Prefix)
	}
	if first == r.anycast() && first.Less(last) {
		first = first.Next()
	}
	return first, last
}

// anycast is the subnet-router anycast address of the block's subnet
// (Subnet, else Prefix): its first address, when the subnet is IPv6 and
// shorter than /127 (RFC 4291 2.6.1: every router of the subnet answers
// it, so a pod given it loses its traffic; RFC 6164 makes both addresses
// of a /127 usable). It is the IPv6 counterpart of an IPv4 subnet's
// network address, which the sources leave out below /31; host-local
// skips both. The zero Addr for IPv4.
func (r Range) anycast() netip.Addr {
	subnet := r.Subnet
	if !subnet.IsValid() {
		subnet = r.Prefix
	}
	if !subnet.Addr().Is6() || subnet.Addr().Is4In6() || subnet.Bits() >= 127 {
		return netip.Addr{}
	}
	return subnet.Masked().Addr()
}

// Contains reports whether ip is a usable address of the block.
func (r Range) Contains(ip netip.Addr) bool {
	first, last := r.Bounds()
	if ip.BitLen() != first.BitLen() || ip.Compare(first) < 0 || ip.Compare(last) > 0 {
		return false
	}
	return !slices.Contains(r.Exclude, ip)
}

// Size counts the block's usable addresses, saturating at MaxUint64 (an
// IPv6 /64 holds 2^64).
func (r Range) Size() uint64 {
	first, last := r.Bounds()
	seen := map[netip.Addr]bool{}
	for _, ip := range r.Exclude {
		if ip.BitLen() == first.BitLen() && ip.Compare(first) >= 0 && ip.Compare(last) <= 0 {
			seen[ip] = true
		}
	}
	return Count(first, last, len(seen))
}

// Count is the number of addresses from first to last (first <= last, one
// family) less excluded of them, saturating at MaxUint64.
func Count(first, last netip.Addr, excluded int) uint64 {
	ah, al := halves(first)
	bh, bl := halves(last)
	lo, borrow := bits.Sub64(bl, al, 0)
	hi, _ := bits.Sub64(bh, ah, borrow)
	lo, carry := bits.Add64(lo, 1, 0)
	hi += carry
	lo, borrow = bits.Sub64(lo, uint64(excluded), 0)
	hi -= borrow
	if hi != 0 {
		return math.MaxUint64
	}
	return lo
}

func halves(ip netip.Addr) (hi, lo uint64) {
	b := ip.As16()
	for i := range 8 {
		hi = hi<<8 | uint64(b[i])
		lo = lo<<8 | uint64(b[8+i])
	}
	return hi, lo
}

// SatAdd is a+b, saturating at MaxUint64.
func SatAdd(a, b uint64) uint64 {
	s, carry := bits.Add64(a, b, 0)
	if carry != 0 {
		return math.MaxUint64
	}
	return s
}

// LastAddr is the highest address of p.
func LastAddr(p netip.Prefix) netip.Addr {
	b := p.Masked().Addr().AsSlice()
	for bit := p.Bits(); bit < len(b)*8; bit++ {
		b[bit/8] |= 1 << (7 - bit%8)
	}
	ip, _ := netip.AddrFromSlice(b)
	return ip
}

// Family is "ipv4" or "ipv6", as the metrics and ipamctl name them.
func Family(ip netip.Addr) string {
	if ip.Is4() || ip.Is4In6() {
		return "ipv4"
	}
	return "ipv6"
}

// Pool is the datastore's side of a Source: the only way a Source changes
// which addresses exist. Implementations are safe for concurrent use.
type Pool interface {
	// AddAddresses makes addresses available. Adding an address that is
	// already in the pool updates its Subnet, Gateway and Group.
	AddAddresses(ctx context.Context, addrs []Address) error
	// AddRanges makes blocks of addresses available. Adding a block the
	// pool has (same Prefix) updates it; a block overlapping another is
	// refused.
	AddRanges(ctx context.Context, ranges []Range) error
	// TakeFree removes up to n addresses of group that are free and past
	// their cooldown, durably, and returns them. It takes addresses added
	// one by one (AddAddresses), never carves a block of AddRanges. An assigned or cooling
	// address is never taken. A source that fails to give the addresses
	// back to the provider returns them with AddAddresses.
	TakeFree(ctx context.Context, group string, n int) ([]Address, error)
	// RemoveRange removes the block of prefix (AddRanges) when none of
	// its addresses is assigned, cooling or quarantined, and reports
	// whether it did. A source gives a delegated prefix back to the
	// provider only after this: a prefix is released only when no
	// address in it is held. A source that fails to give it back puts it
	// in again with AddRanges.
	RemoveRange(ctx context.Context, prefix netip.Prefix) (bool, error)
	// Usage reports, per group, how many addresses exist and how many are
	// assigned to pods.
	Usage() []GroupUsage
}

// GroupUsage is one group's share of the pool.
type GroupUsage struct {
	Group    string
	Total    int // addresses in the pool
	Assigned int // held by pods
	Cooling  int // released, waiting out the cooldown
}

// Source fills a Pool and keeps it at the size its policy wants.
type Source interface {
	// Name is "static", "aws", ...
	Name() string
	// Run adds the source's addresses to pool and, for sources that grow
	// and shrink, keeps adjusting it until ctx is done. It returns once the
	// initial addresses are in the pool when the source has nothing more
	// to do (static), or when ctx is done. An error means the source could
	// not provide its initial addresses.
	Run(ctx context.Context, pool Pool) error
}
