// Package static is the IP source that runs anywhere: a fixed list of
// CIDRs from config. It fills the pool once and has nothing more to do.
//
// Every address of each prefix goes into the pool except the network and
// broadcast addresses of IPv4 prefixes shorter than /31 (RFC 3021 makes
// both addresses of a /31 usable), the first address of IPv6 prefixes
// shorter than /127 (the subnet-router anycast address: ipsource.Range's
// rule, every source's), the gateway and any reserved address.
// Each prefix goes to the pool as one block (ipsource.Range), never as a
// list of addresses, so an IPv6 /64 costs what an IPv4 /30 costs. CIDRs of
// both families make the pool dual-stack: each pod gets one address of
// each.
//
// See docs/architecture.md for where this package sits and the life of an
// ADD, a DEL, a reconcile pass and a restart through the daemon.
package static

import (
	"context"
	"fmt"
	"net/netip"

	"github.com/sandboxipam/sandboxipam/ipamd/ipsource"
)

// Group is the pool group of every static address.
const Group = "static"

// Config is the static source's configuration.
type Config struct {
	// CIDRs are the pod networks. Required; they may not overlap.
	CIDRs []netip.Prefix
	// Reserved addresses are never handed out. Each must lie in one of
	// the CIDRs.
	Reserved []netip.Addr
	// Gateways, when set, has one entry per CIDR: the pod's default route
	// next hop for that CIDR, or the zero Addr for none (the CNI plugin
	// then routes via its host-side veth). A gateway is never handed out.
	Gateways []netip.Addr
}

// Source hands the configured blocks to the pool.
type Source struct {
	ranges []ipsource.Range
}

var _ ipsource.Source = (*Source)(nil)

// New validates cfg and builds one block per CIDR.
func New(cfg Config) (*Source, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	var excluded []netip.Addr
	excluded = append(excluded, cfg.Reserved...)
	for _, gw := range cfg.Gateways {
		if gw.IsValid() {
			excluded = append(excluded, gw)
		}
	}
	ranges := make([]ipsource.Range, 0, len(cfg.CIDRs))
	for i, p := range cfg.CIDRs {
		var gw netip.Addr
		if i < len(cfg.Gateways) {
			gw = cfg.Gateways[i]
		}
		ranges = append(ranges, usable(p.Masked(), gw, excluded, Group))
	}
	return &Source{ranges: ranges}, nil
}

// Validate checks cfg; errors name the field and the value.
func (c Config) Validate() error {
	if len(c.CIDRs) == 0 {
		return fmt.Errorf("static.cidrs: at least one CIDR is required")
	}
	for i, p := range c.CIDRs {
		if err := validatePrefix(i, p); err != nil {
			return err
		}
		for j := range i {
			if c.CIDRs[j].Overlaps(p) {
				return fmt.Errorf("static.cidrs[%d]: %q overlaps static.cidrs[%d] %q", i, p, j, c.CIDRs[j])
			}
		}
	}
	for i, ip := range c.Reserved {
		if !ip.IsValid() || !c.contains(ip) {
			return fmt.Errorf("static.reserved[%d]: %q is not an address in any of static.cidrs", i, addrText(ip))
		}
	}
	if len(c.Gateways) > 0 && len(c.Gateways) != len(c.CIDRs) {
		return fmt.Errorf("static.gateways: %d entries for %d CIDRs; give one per CIDR (empty for none)", len(c.Gateways), len(c.CIDRs))
	}
	for i, gw := range c.Gateways {
		if gw.IsValid() && !c.CIDRs[i].Contains(gw) {
			return fmt.Errorf("static.gateways[%d]: %q is not in static.cidrs[%d] %q", i, gw, i, c.CIDRs[i])
		}
	}
	return nil
}

func validatePrefix(i int, p netip.Prefix) error {
	if !p.IsValid() {
		return fmt.Errorf("static.cidrs[%d]: %q is not a valid CIDR", i, prefixText(p))
	}
	if p.Addr().Is4In6() {
		return fmt.Errorf("static.cidrs[%d]: %q is an IPv4-mapped IPv6 prefix; write it as IPv4", i, p)
	}
	if p.Masked() != p {
		return fmt.Errorf("static.cidrs[%d]: %q has host bits set; did you mean %q?", i, p, p.Masked())
	}
	return nil
}

func (c Config) contains(ip netip.Addr) bool {
	for _, p := range c.CIDRs {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}

// prefixText shows an invalid prefix as the user wrote it, when it can.
func prefixText(p netip.Prefix) string {
	if p.Addr().IsValid() {
		return fmt.Sprintf("%s/%d", p.Addr(), p.Bits())
	}
	return p.String()
}

func addrText(ip netip.Addr) string {
	if !ip.IsValid() {
		return ""
	}
	return ip.String()
}

// usable is the block of p's usable addresses: all of them but an IPv4
// subnet's network and broadcast addresses (below /31) and the excluded
// addresses (gateways, reserved) inside p.
func usable(p netip.Prefix, gw netip.Addr, excluded []netip.Addr, group string) ipsource.Range {
	r := ipsource.Range{Prefix: p, Subnet: p, Gateway: gw, Group: group}
	r.First, r.Last = r.Bounds()
	if p.Addr().Is4() && p.Bits() < 31 {
		r.First, r.Last = r.First.Next(), r.Last.Prev()
	}
	for _, ip := range excluded {
		if p.Contains(ip) {
			r.Exclude = append(r.Exclude, ip)
		}
	}
	return r
}

// Block is the pool block of prefix p under the static source's rules
// (every address but an IPv4 subnet's network and broadcast below /31),
// in group: the node source's blocks follow the same rules.
func Block(p netip.Prefix, group string) ipsource.Range {
	return usable(p.Masked(), netip.Addr{}, nil, group)
}

// Name is "static".
func (s *Source) Name() string { return Group }

// Ranges returns a copy of the blocks the source provides.
func (s *Source) Ranges() []ipsource.Range {
	out := make([]ipsource.Range, len(s.ranges))
	for i, r := range s.ranges {
		r.Exclude = append([]netip.Addr(nil), r.Exclude...)
		out[i] = r
	}
	return out
}

// Size counts the addresses the source provides, saturating at
// MaxUint64.
func (s *Source) Size() uint64 {
	var n uint64
	for _, r := range s.ranges {
		n = ipsource.SatAdd(n, r.Size())
	}
	return n
}

// Run adds the configured blocks to pool and returns: a static pool
// never changes while ipamd runs.
func (s *Source) Run(ctx context.Context, pool ipsource.Pool) error {
	if err := pool.AddRanges(ctx, s.Ranges()); err != nil {
		return fmt.Errorf("static source: %w", err)
	}
	return nil
}
