// Command firstiponly is a deliberately broken adapter, built only by the
// conformance suite's own tests. Its ListSandboxes is right; its
// GetSandbox reports only the first of a sandbox's addresses, as one built
// on CRI's PodSandboxStatus.network.ip alone does, forgetting
// additional_ips, where a dual-stack pod's second family is. ipamd, asking
// about one pod, would take that pod's other address for free. IDs,
// identity and states are right, and so is every single-stack pod. The
// suite must fail it on list-get-agree (and on the checks that get a
// running dual-stack pod: pod-ips-match, recreated-pod-own-identity), on
// either base (see package brokenbase).
package main

import (
	"context"
	"net/netip"
	"slices"

	"github.com/sandboxipam/sandboxipam/conformance/testdata/brokenbase"
	"github.com/sandboxipam/sandboxipam/runtime"
)

// firstIPOnly is the base adapter whose GetSandbox keeps one address.
type firstIPOnly struct {
	runtime.RuntimeAdapter
}

// GetSandbox reports the sandbox with its first address only, IPv4 before
// IPv6 as containerd and CRI-O order a dual-stack pod's.
func (a *firstIPOnly) GetSandbox(ctx context.Context, id string) (runtime.Sandbox, error) {
	sb, err := a.RuntimeAdapter.GetSandbox(ctx, id)
	if len(sb.IPs) > 1 {
		ips := slices.Clone(sb.IPs)
		slices.SortFunc(ips, netip.Addr.Compare)
		sb.IPs = ips[:1]
	}
	return sb, err
}

func main() {
	brokenbase.Serve("firstiponly", func(base runtime.RuntimeAdapter) runtime.RuntimeAdapter {
		return &firstIPOnly{RuntimeAdapter: base}
	})
}
