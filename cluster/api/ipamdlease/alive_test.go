package ipamdlease_test

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/sandboxipam/sandboxipam/cluster/api/ipamdlease"
)

// The addresses annotation round-trips, sorted; an entry that is not an
// IP address and a port is refused, naming it.
func TestAddressesAnnotation(t *testing.T) {
	addrs := []netip.AddrPort{netip.MustParseAddrPort("[fd00::5]:61682"), netip.MustParseAddrPort("10.0.0.5:61682")}
	v := ipamdlease.FormatAddresses(addrs)
	if v != "10.0.0.5:61682,[fd00::5]:61682" {
		t.Fatalf("FormatAddresses = %q", v)
	}
	got, err := ipamdlease.ParseAddresses(v)
	if err != nil || len(got) != 2 || got[0] != addrs[1] || got[1] != addrs[0] {
		t.Fatalf("ParseAddresses(%q) = %v, %v", v, got, err)
	}
	if got, err := ipamdlease.ParseAddresses(""); err != nil || len(got) != 0 {
		t.Fatalf("ParseAddresses(\"\") = %v, %v", got, err)
	}
	for v, want := range map[string]string{
		"node-1.example:61682": `host "node-1.example" is not an IP address`,
		"10.0.0.5":             `"10.0.0.5" is not host:port`,
		"10.0.0.5:0":           `port "0" is not 1-65535`,
		"[fe80::1%eth0]:1":     "without a zone",
	} {
		if _, err := ipamdlease.ParseAddresses(v); err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), ipamdlease.LeaseAddressesAnnotation) {
			t.Errorf("ParseAddresses(%q): %v, want an error naming %q", v, err, want)
		}
	}
}
