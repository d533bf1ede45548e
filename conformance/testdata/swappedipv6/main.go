// Command swappedipv6 is a deliberately broken adapter, built only by the
// conformance suite's own tests. Its ListSandboxes hands the IPv6
// addresses round: each sandbox that has one reports the next such
// sandbox's, its IPv4 addresses untouched, as an adapter that pairs a
// runtime's per-family address lists by index would. ipamd, rebuilding
// from it, would hold each pod's IPv6 address for another pod and give a
// live pod's away. Every IPv4-only pod, and every IPv4 address, is right,
// so a suite whose pods are all IPv4-only passes it. The suite must fail
// it on pod-ips-match (and on recreated-pod-own-identity, whose pods are
// dual-stack), on either base (see package brokenbase).
package main

import (
	"context"
	"net/netip"
	"slices"

	"github.com/sandboxipam/sandboxipam/conformance/testdata/brokenbase"
	"github.com/sandboxipam/sandboxipam/runtime"
)

// swappedIPv6 is the base adapter with its IPv6 addresses rotated.
type swappedIPv6 struct {
	runtime.RuntimeAdapter
}

// ListSandboxes gives each sandbox with IPv6 addresses the next such
// sandbox's.
func (s *swappedIPv6) ListSandboxes(ctx context.Context) ([]runtime.Sandbox, error) {
	list, err := s.RuntimeAdapter.ListSandboxes(ctx)
	if err != nil {
		return nil, err
	}
	var withIPv6 []int
	for i, sb := range list {
		if len(family(sb.IPs, false)) > 0 {
			withIPv6 = append(withIPv6, i)
		}
	}
	rotated := make([][]netip.Addr, len(withIPv6))
	for j := range withIPv6 {
		next := list[withIPv6[(j+1)%len(withIPv6)]]
		rotated[j] = slices.Concat(family(list[withIPv6[j]].IPs, true), family(next.IPs, false))
	}
	for j, i := range withIPv6 {
		list[i].IPs = rotated[j]
	}
	return list, nil
}

// family returns the IPv4 (v4) or IPv6 addresses of ips.
func family(ips []netip.Addr, v4 bool) []netip.Addr {
	var out []netip.Addr
	for _, ip := range ips {
		if ip.Unmap().Is4() == v4 {
			out = append(out, ip)
		}
	}
	return out
}

func main() {
	brokenbase.Serve("swappedipv6", func(base runtime.RuntimeAdapter) runtime.RuntimeAdapter {
		return &swappedIPv6{RuntimeAdapter: base}
	})
}
