package v1alpha1

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// BlockName is the object name of block p: a DNS subdomain that only p
// has, so creating it is claiming p. An IPv4 block keeps its dotted form
// with the prefix length after a dash ("198.18.0.64-26"); an IPv6 block
// writes all eight groups in lower-case hex without leading zeros, joined
// by dashes, then the length ("fd00-0-0-0-0-0-0-40-122"), since ':' is
// not allowed in a name and "::" would make two spellings of one block.
func BlockName(p netip.Prefix) string {
	p = p.Masked()
	a := p.Addr()
	if a.Is4() {
		return fmt.Sprintf("%s-%d", a, p.Bits())
	}
	b := a.As16()
	groups := make([]string, 0, 9)
	for i := 0; i < 16; i += 2 {
		groups = append(groups, strconv.FormatUint(uint64(b[i])<<8|uint64(b[i+1]), 16))
	}
	groups = append(groups, strconv.Itoa(p.Bits()))
	return strings.Join(groups, "-")
}

// ParseBlockName is BlockName's inverse. It accepts only canonical names:
// the name of a masked prefix, spelt exactly as BlockName spells it.
func ParseBlockName(name string) (netip.Prefix, error) {
	p, err := parseBlockName(name)
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("%q: %w: %w", name, ErrBadBlockName, err)
	}
	if BlockName(p) != name {
		return netip.Prefix{}, fmt.Errorf("%q: %w: the canonical name of %s is %q", name, ErrBadBlockName, p, BlockName(p))
	}
	return p, nil
}

func parseBlockName(name string) (netip.Prefix, error) {
	i := strings.LastIndexByte(name, '-')
	if i < 0 {
		return netip.Prefix{}, fmt.Errorf("no prefix length after a '-'")
	}
	bits, err := strconv.Atoi(name[i+1:])
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("prefix length: %w", err)
	}
	head := name[:i]
	var a netip.Addr
	if strings.Contains(head, ".") {
		if a, err = netip.ParseAddr(head); err != nil || !a.Is4() {
			return netip.Prefix{}, fmt.Errorf("IPv4 address %q: not valid", head)
		}
	} else {
		if a, err = netip.ParseAddr(strings.ReplaceAll(head, "-", ":")); err != nil || !a.Is6() || a.Zone() != "" {
			return netip.Prefix{}, fmt.Errorf("IPv6 address %q: not valid", head)
		}
	}
	p, err := a.Prefix(bits)
	if err != nil || bits < 0 {
		return netip.Prefix{}, fmt.Errorf("prefix length %d: not valid for %s", bits, a)
	}
	if p.Addr() != a {
		return netip.Prefix{}, fmt.Errorf("%s/%d: host bits set", a, bits)
	}
	return p, nil
}
