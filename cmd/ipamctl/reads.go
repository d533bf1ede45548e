package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/sandboxipam/sandboxipam/ipamd/introspect/client"
)

// errNotReady: ipamctl ready found ipamd not ready (exit 1).
var errNotReady = errors.New("ipamd is not ready")

func (a *app) podsCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "pods",
		Short: "every assigned IP, by infra sandbox ID (the key CNI DEL matches on)",
		Long: `pods lists every attachment ipamd holds an address for: its infra sandbox ID,
network and interface (the key a CNI DEL matches on), the pod, the addresses
and their age.`,
		Example: `  ipamctl pods
  ipamctl pods -o json | jq -r '.pods[] | .sandboxID + " " + .ip'`,
		Args: cobra.NoArgs,
		RunE: a.runE(func(ctx context.Context, _ []string) error {
			v, err := a.reads().Pods(ctx)
			if err != nil {
				return err
			}
			return a.print(v, func() error { return client.RenderPods(a.stdout, v) })
		}),
	}
}

func (a *app) poolCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "pool",
		Short: "addresses per group and family: total, assigned, cooling, free",
		Long: `pool shows the IP source, the checkpoint's recovery, the addresses per group
and family (total, assigned, cooling, quarantined, free), the ranges, and
whatever holds addresses back (a retiring range, a pool waiting for its
range, a datastore not yet proven).`,
		Example: `  ipamctl pool
  ipamctl pool -o json | jq .free`,
		Args: cobra.NoArgs,
		RunE: a.runE(func(ctx context.Context, _ []string) error {
			v, err := a.reads().Pool(ctx)
			if err != nil {
				return err
			}
			return a.print(v, func() error { return client.RenderPool(a.stdout, v) })
		}),
	}
}

func (a *app) adapterCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "adapter",
		Short: "the runtime adapter, its health and restarts, and the last reconcile pass",
		Long: `adapter shows the runtime adapter ipamd chose and why, the runtime it reaches,
its health and restarts, whether it has shown a sandbox CNI added (an adapter
that has not releases nothing), and the last reconcile pass.`,
		Example: `  ipamctl adapter`,
		Args:    cobra.NoArgs,
		RunE: a.runE(func(ctx context.Context, _ []string) error {
			v, err := a.reads().Adapter(ctx)
			if err != nil {
				return err
			}
			return a.print(v, func() error { return client.RenderAdapter(a.stdout, v) })
		}),
	}
}

func (a *app) enisCommand() *cobra.Command {
	return &cobra.Command{
		Use:     "enis",
		Short:   "the ENIs of the aws IP source",
		Long:    `enis prints the aws IP source's ENI document as ipamd sends it (JSON either way).`,
		Example: `  ipamctl enis`,
		Args:    cobra.NoArgs,
		RunE: a.runE(func(ctx context.Context, _ []string) error {
			v, err := a.reads().ENIs(ctx)
			if err != nil {
				return err
			}
			return a.print(v, func() error { _, err := fmt.Fprintf(a.stdout, "%s\n", v); return err })
		}),
	}
}

func (a *app) routesCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "routes",
		Short: "the routes to other nodes' pod ranges (routes.nodes), and the nodes skipped",
		Long: `routes shows the routes ipamd keeps to other nodes' podCIDRs and IPBlocks
(routes.nodes), with ipamd's route protocol number, and each node it skipped
and why.`,
		Example: `  ipamctl routes`,
		Args:    cobra.NoArgs,
		RunE: a.runE(func(ctx context.Context, _ []string) error {
			v, err := a.reads().Routes(ctx)
			if err != nil {
				return err
			}
			return a.print(v, func() error { return client.RenderRoutes(a.stdout, v) })
		}),
	}
}

func (a *app) whoCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "who ADDRESS|SANDBOX-ID|POD-NAME",
		Short: "who holds an address, since when, its sandbox's state, and its history",
		Long: `who reads its argument as an address, else as a sandbox ID (or a prefix of at
least 6 characters) that ipamd, its history or the runtime knows, else as a
pod name (name or namespace/name), and shows who holds it, since when, the
sandbox's state in the runtime, and ipamd's recent history of it.`,
		Example: `  ipamctl who 10.0.0.7
  ipamctl who 93e629d853d9
  ipamctl who prod/web-1 -o json`,
		Args: exactArgs(1, "ADDRESS|SANDBOX-ID|POD-NAME"),
		RunE: a.runE(func(ctx context.Context, args []string) error {
			v, err := a.reads().Who(ctx, args[0])
			if err != nil {
				return err
			}
			return a.print(v, func() error { return client.RenderWho(a.stdout, v) })
		}),
	}
}

func (a *app) readyCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "ready",
		Short: "whether ipamd can serve ADD, and when not, why (GET /readyz)",
		Long: `ready asks ipamd's /readyz on the introspection address, the readiness probe's
question: can ipamd serve ADD? It prints the answer, "ready", or "not ready:"
and one "- reason" line per unmet condition, and exits 0 when ready and 1
when not. With -o json it prints {"ready": true|false, "reasons": [...]}.`,
		Example: `  ipamctl ready
  until ipamctl ready >/dev/null; do sleep 5; done
  ipamctl ready -o json | jq -r '.reasons[]'`,
		Args: cobra.NoArgs,
		RunE: a.runE(func(ctx context.Context, _ []string) error {
			v, err := a.reads().Readiness(ctx)
			if err != nil {
				return err
			}
			if err := a.print(v, func() error { return client.RenderReadiness(a.stdout, v) }); err != nil {
				return err
			}
			if !v.Ready {
				return fmt.Errorf("%w: %d reason(s)", errNotReady, len(v.Reasons))
			}
			return nil
		}),
	}
}
