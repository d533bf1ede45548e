package static

import (
	"fmt"
	"net/netip"
)

// ParseConfig builds a Config from the strings of a config file, naming
// the field and the value in every error, e.g.
// `static.cidrs[1]: "198.18.0.0/33" is not a valid CIDR`. An empty gateway
// string means none for that CIDR. The result is validated.
func ParseConfig(cidrs, reserved, gateways []string) (Config, error) {
	var cfg Config
	for i, text := range cidrs {
		p, err := netip.ParsePrefix(text)
		if err != nil {
			return Config{}, fmt.Errorf("static.cidrs[%d]: %q is not a valid CIDR", i, text)
		}
		cfg.CIDRs = append(cfg.CIDRs, p)
	}
	for i, text := range reserved {
		ip, err := netip.ParseAddr(text)
		if err != nil {
			return Config{}, fmt.Errorf("static.reserved[%d]: %q is not a valid IP address", i, text)
		}
		cfg.Reserved = append(cfg.Reserved, ip)
	}
	for i, text := range gateways {
		var gw netip.Addr
		if text != "" {
			var err error
			if gw, err = netip.ParseAddr(text); err != nil {
				return Config{}, fmt.Errorf("static.gateways[%d]: %q is not a valid IP address", i, text)
			}
		}
		cfg.Gateways = append(cfg.Gateways, gw)
	}
	if err := cfg.Validate(); err != nil {
		return Config{}, err
	}
	return cfg, nil
}
