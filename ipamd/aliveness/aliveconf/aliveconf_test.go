package aliveconf

import (
	"net/netip"
	"slices"
	"strings"
	"testing"
)

func TestValidateNamesTheField(t *testing.T) {
	if err := DefaultConfig().Validate(); err != nil || DefaultConfig().Addresses() != nil {
		t.Fatalf("defaults: %v, addresses %v", err, DefaultConfig().Addresses())
	}
	for want, c := range map[string]Config{
		"port must be 1-65535, got 0":                                                                  {Port: 0},
		`hosts[1] must be an IP address of this node, got "node-1"`:                                    {Port: 1, Hosts: []string{"10.0.0.1", "node-1"}},
		`hosts[0] must be an address other nodes reach (not loopback or unspecified), got "127.0.0.1"`: {Port: 1, Hosts: []string{"127.0.0.1"}},
		`hosts[0] must be an address other nodes reach (not loopback or unspecified), got "::"`:        {Port: 1, Hosts: []string{"::"}},
	} {
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%+v: %v, want %q", c, err, want)
		}
	}
	c := Config{Port: 61682, Hosts: []string{"10.0.0.1", "fd00::1"}}
	if got := c.Addresses(); !slices.Equal(got, []netip.AddrPort{netip.MustParseAddrPort("10.0.0.1:61682"), netip.MustParseAddrPort("[fd00::1]:61682")}) {
		t.Fatalf("addresses %v", got)
	}
}
