// Command swappedips is a deliberately broken adapter, built only by the
// conformance suite's own tests. It is the shipped docker adapter, which
// reads each pod's IPs from its sandbox's network namespace, with the IPs
// handed round: each sandbox that has addresses reports the next one's.
// IDs, identity and states are right. ipamd, rebuilding its state from
// it, would give a live pod's address away. The suite must fail it on
// pod-ips-match.
package main

import (
	"context"
	"flag"
	"fmt"
	"net/netip"
	"os"
	"slices"

	"github.com/sandboxipam/sandboxipam/adapters/docker"
	"github.com/sandboxipam/sandboxipam/runtime"
	"github.com/sandboxipam/sandboxipam/runtime/plugin"
)

// swappedIPs is the shipped adapter with its pod IPs rotated.
type swappedIPs struct {
	*docker.Adapter
}

// ListSandboxes gives each sandbox with IPs the next such sandbox's IPs.
func (s *swappedIPs) ListSandboxes(ctx context.Context) ([]runtime.Sandbox, error) {
	sandboxes, err := s.Adapter.ListSandboxes(ctx)
	if err != nil {
		return nil, err
	}
	var withIPs []int
	for i, sb := range sandboxes {
		if len(sb.IPs) > 0 {
			withIPs = append(withIPs, i)
		}
	}
	rotated := make([][]netip.Addr, len(withIPs))
	for j := range withIPs {
		rotated[j] = slices.Clone(sandboxes[withIPs[(j+1)%len(withIPs)]].IPs)
	}
	for j, i := range withIPs {
		sandboxes[i].IPs = rotated[j]
	}
	return sandboxes, nil
}

func main() {
	cfg := docker.DefaultConfig()
	cfg.RegisterFlags(flag.CommandLine)
	flag.Parse()
	adapter, err := docker.New(cfg, plugin.NewLogger())
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	plugin.Serve(&swappedIPs{Adapter: adapter})
}
