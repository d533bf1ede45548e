package client_test

import (
	"bytes"
	"context"
	"net/netip"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"net/http/httptest"

	"github.com/sandboxipam/sandboxipam/ipamd/datastore"
	"github.com/sandboxipam/sandboxipam/ipamd/introspect"
	"github.com/sandboxipam/sandboxipam/ipamd/introspect/client"
	"github.com/sandboxipam/sandboxipam/ipamd/ipsource/static"
)

// ipamctl pool shows the families and the ranges of a dual-stack pool
// (an IPv6 /64 included: 2^64 less its reserved first address is 2^64-1,
// where counts saturate), and ipamctl pods
// both addresses of a dual-stack pod.
func TestDualStackPoolAndPodsTables(t *testing.T) {
	ctx := context.Background()
	store, err := datastore.Open(ctx, datastore.Options{Path: filepath.Join(t.TempDir(), "ck"), Now: func() time.Time { return t0 }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	src, err := static.New(static.Config{CIDRs: []netip.Prefix{netip.MustParsePrefix("198.18.0.0/29"), netip.MustParsePrefix("2001:db8:7::/64")},
		Reserved: []netip.Addr{netip.MustParseAddr("2001:db8:7::")}})
	if err != nil {
		t.Fatal(err)
	}
	if err := src.Run(ctx, store); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Assign(ctx, datastore.Key{Network: "net", SandboxID: "c32c237fb529", IfName: "eth0"},
		datastore.Pod{Name: "coredns", Namespace: "kube-system", UID: "83eeac05"}); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(introspect.Handler(introspect.Deps{Store: store, Source: "static", Now: func() time.Time { return t0.Add(2 * time.Minute) }}))
	t.Cleanup(srv.Close)
	c := client.New(srv.Listener.Addr().String(), nil)

	pods, err := c.Pods(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := client.RenderPods(&out, pods); err != nil {
		t.Fatal(err)
	}
	want := "SANDBOX ID    NETWORK  IFNAME  POD                  UID       IP                              AGE\n" +
		"c32c237fb529  net      eth0    kube-system/coredns  83eeac05  198.18.0.1/29,2001:db8:7::1/64  2m0s\n" +
		"1 assignment(s)\n"
	if out.String() != want {
		t.Errorf("pods table =\n%s\nwant\n%s", out.String(), want)
	}

	pool, err := c.Pool(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if err := client.RenderPool(&out, pool); err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{
		"FAMILY  TOTAL     ASSIGNED  COOLING  QUARANTINED  FREE",
		"ipv4    6         1         0        0            5",
		"ipv6    >=2^64-1  1         0        0            18446744073709551614",
		"198.18.0.0/29    ipv4    static  198.18.0.1     198.18.0.6                        6         1         0        5",
		"2001:db8:7::/64  ipv6    static  2001:db8:7::1  2001:db8:7:0:ffff:ffff:ffff:ffff  >=2^64-1  1         0        18446744073709551614",
		"static  >=2^63-1  2         0        >=2^63-1",
	} {
		if !strings.Contains(out.String(), line) {
			t.Errorf("pool table lacks %q:\n%s", line, out.String())
		}
	}
}
