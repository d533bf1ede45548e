// Command ipv4only is a deliberately broken adapter, built only by the
// conformance suite's own tests. It reports only the IPv4 addresses of
// each sandbox, in ListSandboxes and GetSandbox alike, as an adapter
// written for a single-stack cluster does (one that parses pod IPs with
// net.IP.To4, or keeps the first address of "eth0" and skips the rest). A
// dual-stack pod then holds an IPv6 address that ipamd, rebuilding from the
// adapter after a state loss, takes for free; an IPv6-only pod holds none.
// IDs, identity and states are right, and both calls agree. The suite must
// fail it on pod-ips-match (and on recreated-pod-own-identity, whose pods
// are dual-stack), on either base (see package brokenbase).
package main

import (
	"context"
	"net/netip"
	"slices"

	"github.com/sandboxipam/sandboxipam/conformance/testdata/brokenbase"
	"github.com/sandboxipam/sandboxipam/runtime"
)

// ipv4Only is the base adapter without IPv6 addresses.
type ipv4Only struct {
	runtime.RuntimeAdapter
}

// ListSandboxes lists each sandbox with its IPv4 addresses only.
func (a *ipv4Only) ListSandboxes(ctx context.Context) ([]runtime.Sandbox, error) {
	list, err := a.RuntimeAdapter.ListSandboxes(ctx)
	for i := range list {
		list[i].IPs = dropIPv6(list[i].IPs)
	}
	return list, err
}

// GetSandbox reports the sandbox with its IPv4 addresses only.
func (a *ipv4Only) GetSandbox(ctx context.Context, id string) (runtime.Sandbox, error) {
	sb, err := a.RuntimeAdapter.GetSandbox(ctx, id)
	sb.IPs = dropIPv6(sb.IPs)
	return sb, err
}

func dropIPv6(ips []netip.Addr) []netip.Addr {
	return slices.DeleteFunc(slices.Clone(ips), func(ip netip.Addr) bool { return !ip.Unmap().Is4() })
}

func main() {
	brokenbase.Serve("ipv4only", func(base runtime.RuntimeAdapter) runtime.RuntimeAdapter {
		return &ipv4Only{RuntimeAdapter: base}
	})
}
