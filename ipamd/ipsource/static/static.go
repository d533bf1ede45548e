// Package static is the IP source that runs anywhere: a fixed list of
// CIDRs from config. It fills the pool once and has nothing more to do.
//
// Every address of each prefix goes into the pool except the network and
// broadcast addresses of IPv4 prefixes shorter than /31 (RFC 3021 makes
// both addresses of a /31 usable), the gateway and any reserved address.
// IPv6 prefixes are enumerated too, up to MaxAddressesPerCIDR each: a /64
// cannot be listed address by address, so a larger prefix is refused with
// an error rather than silently truncated.
package static

import (
	"context"
	"fmt"
	"net/netip"

	"github.com/sandboxipam/sandboxipam/ipamd/ipsource"
)

// Group is the pool group of every static address.
const Group = "static"

// MaxAddressesPerCIDR caps how many addresses one prefix may hold.
const MaxAddressesPerCIDR = 65536

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

// Source hands the configured addresses to the pool.
type Source struct {
	addrs []ipsource.Address
}

var _ ipsource.Source = (*Source)(nil)

// New validates cfg and enumerates its addresses.
func New(cfg Config) (*Source, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	reserved := make(map[netip.Addr]bool, len(cfg.Reserved)+len(cfg.Gateways))
	for _, ip := range cfg.Reserved {
		reserved[ip] = true
	}
	for _, gw := range cfg.Gateways {
		if gw.IsValid() {
			reserved[gw] = true
		}
	}
	var addrs []ipsource.Address
	for i, p := range cfg.CIDRs {
		var gw netip.Addr
		if i < len(cfg.Gateways) {
			gw = cfg.Gateways[i]
		}
		addrs = appendUsable(addrs, p.Masked(), gw, reserved)
	}
	return &Source{addrs: addrs}, nil
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
	if hostBits := p.Addr().BitLen() - p.Bits(); hostBits > 16 {
		return fmt.Errorf("static.cidrs[%d]: %q holds more than %d addresses; split it or use a longer prefix", i, p, MaxAddressesPerCIDR)
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

// appendUsable appends every usable address of p.
func appendUsable(out []ipsource.Address, p netip.Prefix, gw netip.Addr, reserved map[netip.Addr]bool) []ipsource.Address {
	first, last := p.Addr(), lastAddr(p)
	if p.Addr().Is4() && p.Bits() < 31 {
		first, last = first.Next(), last.Prev()
	}
	for ip := first; ip.IsValid() && ip.Compare(last) <= 0; ip = ip.Next() {
		if !reserved[ip] {
			out = append(out, ipsource.Address{IP: ip, Subnet: p, Gateway: gw, Group: Group})
		}
	}
	return out
}

// lastAddr is the highest address in p.
func lastAddr(p netip.Prefix) netip.Addr {
	b := p.Addr().AsSlice()
	for bit := p.Bits(); bit < len(b)*8; bit++ {
		b[bit/8] |= 1 << (7 - bit%8)
	}
	ip, _ := netip.AddrFromSlice(b)
	return ip
}

// Name is "static".
func (s *Source) Name() string { return Group }

// Addresses returns a copy of the addresses the source provides.
func (s *Source) Addresses() []ipsource.Address {
	return append([]ipsource.Address(nil), s.addrs...)
}

// Run adds the configured addresses to pool and returns: a static pool
// never changes while ipamd runs.
func (s *Source) Run(ctx context.Context, pool ipsource.Pool) error {
	if err := pool.AddAddresses(ctx, s.Addresses()); err != nil {
		return fmt.Errorf("static source: %w", err)
	}
	return nil
}
