package static_test

import (
	"context"
	"net/netip"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sandboxipam/sandboxipam/ipamd/datastore"
	"github.com/sandboxipam/sandboxipam/ipamd/ipsource"
	"github.com/sandboxipam/sandboxipam/ipamd/ipsource/static"
)

func ips(addrs []ipsource.Address) []string {
	out := make([]string, len(addrs))
	for i, a := range addrs {
		out[i] = a.IP.String()
	}
	return out
}

// addresses lists every usable address of the source's (small) blocks.
func addresses(src *static.Source) []ipsource.Address {
	var out []ipsource.Address
	for _, r := range src.Ranges() {
		first, last := r.Bounds()
		for ip := first; ip.Compare(last) <= 0; ip = ip.Next() {
			if r.Contains(ip) {
				out = append(out, ipsource.Address{IP: ip, Subnet: r.Subnet, Gateway: r.Gateway, Group: r.Group})
			}
		}
	}
	return out
}

func mustNew(t *testing.T, cidrs, reserved, gateways []string) *static.Source {
	t.Helper()
	cfg, err := static.ParseConfig(cidrs, reserved, gateways)
	if err != nil {
		t.Fatal(err)
	}
	src, err := static.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return src
}

func TestIPv4ExcludesNetworkBroadcastAndReserved(t *testing.T) {
	src := mustNew(t, []string{"198.18.0.0/29"}, []string{"198.18.0.3"}, nil)
	got := strings.Join(ips(addresses(src)), " ")
	want := "198.18.0.1 198.18.0.2 198.18.0.4 198.18.0.5 198.18.0.6"
	if got != want {
		t.Fatalf("addresses = %s, want %s", got, want)
	}
	a := addresses(src)[0]
	if a.Subnet != netip.MustParsePrefix("198.18.0.0/29") || a.Group != "static" || a.Gateway.IsValid() {
		t.Fatalf("address = %+v", a)
	}
}

func TestPointToPointPrefixesUseEveryAddress(t *testing.T) {
	if got := strings.Join(ips(addresses(mustNew(t, []string{"198.18.0.0/31"}, nil, nil))), " "); got != "198.18.0.0 198.18.0.1" {
		t.Fatalf("/31 = %s", got)
	}
	if got := strings.Join(ips(addresses(mustNew(t, []string{"198.18.0.7/32"}, nil, nil))), " "); got != "198.18.0.7" {
		t.Fatalf("/32 = %s", got)
	}
}

func TestGatewayPerCIDRIsReportedAndNeverHandedOut(t *testing.T) {
	src := mustNew(t, []string{"198.18.0.0/30", "198.18.1.0/30"}, nil, []string{"198.18.0.1", ""})
	got := addresses(src)
	if strings.Join(ips(got), " ") != "198.18.0.2 198.18.1.1 198.18.1.2" {
		t.Fatalf("addresses = %v", ips(got))
	}
	if got[0].Gateway != netip.MustParseAddr("198.18.0.1") || got[1].Gateway.IsValid() {
		t.Fatalf("gateways = %s, %s", got[0].Gateway, got[1].Gateway)
	}
}

func TestIPv6Prefix(t *testing.T) {
	src := mustNew(t, []string{"2001:db8::/126"}, []string{"2001:db8::1"}, nil)
	if got := strings.Join(ips(addresses(src)), " "); got != "2001:db8::2 2001:db8::3" { // :: is the subnet-router anycast address, ::1 reserved
		t.Fatalf("addresses = %s", got)
	}
	if n := mustNew(t, []string{"2001:db8::/112"}, nil, nil).Size(); n != 65535 {
		t.Fatalf("/112 = %d addresses, want 65535 (all but the subnet-router anycast address)", n)
	}
}

// A /64 is one block, never a list: the source holds one Range whatever
// its size, and the store hands out its exact addresses.
func TestIPv6Slash64IsOneBlock(t *testing.T) {
	src := mustNew(t, []string{"2001:db8:0:7::/64"}, []string{"2001:db8:0:7::1"}, []string{"2001:db8:0:7::2"})
	rs := src.Ranges()
	if len(rs) != 1 || rs[0].First != netip.MustParseAddr("2001:db8:0:7::1") || rs[0].Last != netip.MustParseAddr("2001:db8:0:7:ffff:ffff:ffff:ffff") {
		t.Fatalf("ranges = %+v", rs)
	}
	if n := src.Size(); n != 1<<64-3 {
		t.Fatalf("Size = %d, want 2^64-3 (exact: 2^64 less the subnet-router anycast address, the gateway and the reserved address)", n)
	}
	ctx := context.Background()
	store, err := datastore.Open(ctx, datastore.Options{Path: filepath.Join(t.TempDir(), "cp")})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	if err := src.Run(ctx, store); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, sb := range []string{"a", "b", "c"} {
		a, err := store.Assign(ctx, datastore.Key{Network: "pods", SandboxID: sb, IfName: "eth0"}, datastore.Pod{})
		if err != nil {
			t.Fatal(err)
		}
		if a.Address.Gateway != netip.MustParseAddr("2001:db8:0:7::2") || a.Address.Subnet != netip.MustParsePrefix("2001:db8:0:7::/64") {
			t.Fatalf("address = %+v", a.Address)
		}
		got = append(got, a.Address.IP.String())
	}
	if strings.Join(got, " ") != "2001:db8:0:7::3 2001:db8:0:7::4 2001:db8:0:7::5" { // never ::, the subnet-router anycast address
		t.Fatalf("assigned %v", got)
	}
}

func TestConfigErrorsNameFieldAndValue(t *testing.T) {
	cases := []struct {
		cidrs, reserved, gateways []string
		want                      string
	}{
		{[]string{"198.18.0.0/24", "198.18.0.0/33"}, nil, nil, `static.cidrs[1]: "198.18.0.0/33" is not a valid CIDR`},
		{nil, nil, nil, `static.cidrs: at least one CIDR is required`},
		{[]string{"198.18.0.0/16", "198.18.4.0/24"}, nil, nil, `static.cidrs[1]: "198.18.4.0/24" overlaps static.cidrs[0] "198.18.0.0/16"`},
		{[]string{"198.18.0.1/24"}, nil, nil, `static.cidrs[0]: "198.18.0.1/24" has host bits set; did you mean "198.18.0.0/24"?`},
		{[]string{"198.18.0.0/24"}, []string{"10.0.0.1"}, nil, `static.reserved[0]: "10.0.0.1" is not an address in any of static.cidrs`},
		{[]string{"198.18.0.0/24"}, []string{"nope"}, nil, `static.reserved[0]: "nope" is not a valid IP address`},
		{[]string{"198.18.0.0/24"}, nil, []string{"198.19.0.1"}, `static.gateways[0]: "198.19.0.1" is not in static.cidrs[0] "198.18.0.0/24"`},
		{[]string{"198.18.0.0/24", "198.18.1.0/24"}, nil, []string{"198.18.0.1"}, `static.gateways: 1 entries for 2 CIDRs; give one per CIDR (empty for none)`},
	}
	for _, c := range cases {
		_, err := static.ParseConfig(c.cidrs, c.reserved, c.gateways)
		if err == nil || err.Error() != c.want {
			t.Errorf("ParseConfig(%v, %v, %v) = %v\nwant %s", c.cidrs, c.reserved, c.gateways, err, c.want)
		}
	}
}

func TestInvalidPrefixValueIsRejectedByNew(t *testing.T) {
	bad := netip.PrefixFrom(netip.MustParseAddr("198.18.0.0"), 33)
	_, err := static.New(static.Config{CIDRs: []netip.Prefix{netip.MustParsePrefix("198.19.0.0/24"), bad}})
	if err == nil || !strings.HasPrefix(err.Error(), "static.cidrs[1]: ") {
		t.Fatalf("err = %v", err)
	}
}

func TestRunFillsARealStore(t *testing.T) {
	ctx := context.Background()
	store, err := datastore.Open(ctx, datastore.Options{Path: filepath.Join(t.TempDir(), "cp")})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	src := mustNew(t, []string{"198.18.0.0/28"}, []string{"198.18.0.1"}, nil)
	if src.Name() != "static" {
		t.Fatalf("Name = %q", src.Name())
	}
	if err := src.Run(ctx, store); err != nil {
		t.Fatal(err)
	}
	if got := store.Usage(); len(got) != 1 || got[0] != (ipsource.GroupUsage{Group: "static", Total: 13}) {
		t.Fatalf("Usage = %+v", got)
	}
	a, err := store.Assign(ctx, datastore.Key{Network: "pods", SandboxID: "s", IfName: "eth0"}, datastore.Pod{})
	if err != nil || a.Address.IP != netip.MustParseAddr("198.18.0.2") {
		t.Fatalf("Assign = %+v, %v", a, err)
	}
}

// A static IPv6 range never gives a pod its first address, the
// subnet-router anycast address (RFC 4291 2.6.1), whatever the source;
// a /127 (RFC 6164) and a /128 keep theirs.
func TestIPv6RangeSkipsTheSubnetRouterAnycastAddress(t *testing.T) {
	src := mustNew(t, []string{"fd00:77::/120"}, nil, nil)
	got := addresses(src)
	if len(got) != 255 || got[0].IP != netip.MustParseAddr("fd00:77::1") || got[254].IP != netip.MustParseAddr("fd00:77::ff") {
		t.Fatalf("%d addresses from %s to %s; want 255, fd00:77::1 to fd00:77::ff", len(got), got[0].IP, got[len(got)-1].IP)
	}
	store, err := datastore.Open(t.Context(), datastore.Options{Path: filepath.Join(t.TempDir(), "cp")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close() })
	if err := src.Run(t.Context(), store); err != nil {
		t.Fatal(err)
	}
	a, err := store.Assign(t.Context(), datastore.Key{Network: "pods", SandboxID: "first", IfName: "eth0"}, datastore.Pod{})
	if err != nil || a.Address.IP != netip.MustParseAddr("fd00:77::1") {
		t.Fatalf("first pod = %v, %v; want fd00:77::1", a.Address.IP, err)
	}
	for cidr, want := range map[string]string{"fd00:77::/127": "fd00:77:: fd00:77::1", "fd00:77::5/128": "fd00:77::5"} {
		if got := strings.Join(ips(addresses(mustNew(t, []string{cidr}, nil, nil))), " "); got != want {
			t.Errorf("%s gives %s, want %s", cidr, got, want)
		}
	}
}
