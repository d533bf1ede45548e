package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/sandboxipam/sandboxipam/ipamd/introspect/client"
	"github.com/sandboxipam/sandboxipam/ipamd/introspect/schema"
)

// minIDPrefix is the shortest sandbox ID prefix release accepts, as who
// does: crictl and docker show 12 or 13 characters, and shorter ones are
// too easy to mistype into another pod.
const minIDPrefix = 6

// Typed outcomes of resolving what the operator typed to one attachment.
var (
	errNoSuchSandbox     = errors.New("ipamd holds no address for it")
	errAmbiguousSandbox  = errors.New("ambiguous: it matches more than one attachment")
	errSandboxPrefixTiny = errors.New("too short a sandbox ID prefix")
)

func (a *app) reconcileCommand() *cobra.Command {
	var dryRun bool
	cmd := &cobra.Command{
		Use:   "reconcile [--dry-run]",
		Short: "run a reconcile pass now (admin socket; root)",
		Long: `reconcile runs a pass now: ipamd lists the runtime's sandboxes through its
adapter and releases the addresses of sandboxes the runtime no longer has,
once older than the grace. With --dry-run it only lists what it would release.
It changes ipamd's state, so it goes to the admin socket (--admin-socket).`,
		Example: `  sudo ipamctl reconcile --dry-run
  sudo ipamctl reconcile -o json`,
		Args: cobra.NoArgs,
		RunE: a.runE(func(ctx context.Context, _ []string) error {
			v, err := a.adminClient().Reconcile(ctx, dryRun)
			if err != nil && v.At.IsZero() {
				return err
			}
			if perr := a.print(v, func() error { return client.RenderReconcile(a.stdout, v) }); perr != nil {
				return perr
			}
			return err // a failed pass reports itself, then fails
		}),
	}
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "only report what would be released")
	return cmd
}

// releaseFlags are release's own flags.
type releaseFlags struct {
	network, ifName string
	force           bool
}

func (a *app) releaseCommand() *cobra.Command {
	var f releaseFlags
	cmd := &cobra.Command{
		Use:   "release [--network NAME] [--ifname eth0] [--force] SANDBOX-ID",
		Short: "free one attachment's address on your word (admin socket; root)",
		Long: `release frees one attachment's address on your word: the way out when the
adapter is blind to a sandbox you know is gone.

SANDBOX-ID is the full infra sandbox ID or a unique prefix of it (at least 6
characters, as crictl pods and docker ps show them), among the attachments
ipamd holds (ipamctl pods). A prefix that matches more than one attachment is
refused, naming each; one that matches none says so.

ipamd refuses while the runtime lists the sandbox, or the runtime or the node
shows its address in use, naming what shows it; --force overrides (logged with
your uid, counted, and the address is quarantined while it is still shown).
It changes ipamd's state, so it goes to the admin socket (--admin-socket).`,
		Example: `  sudo ipamctl release 93e629d853d9
  sudo ipamctl release --network sandboxipam --ifname net1 93e629d853d9
  sudo ipamctl release --force 93e629d853d9  # only when you know better than the runtime`,
		Args: exactArgs(1, "SANDBOX-ID"),
		RunE: a.runE(func(ctx context.Context, args []string) error { return a.release(ctx, f, args[0]) }),
	}
	fl := cmd.Flags()
	fl.StringVar(&f.network, "network", "", "the attachment's CNI network (default: the one its assignment shows in ipamctl pods)")
	fl.StringVar(&f.ifName, "ifname", "eth0", "the attachment's interface name")
	fl.BoolVar(&f.force, "force", false, "release even though the runtime lists the sandbox or the runtime or the node shows its address in use; logged at WARN with your uid, counted, and the address is quarantined while it is still shown")
	return cmd
}

// release resolves what the operator typed to one attachment and asks
// ipamd to release it.
//
// ipamctl resolves a prefix, not ipamd: ipamd's release, like a CNI DEL,
// matches its key (network, sandbox ID, interface) exactly, so nothing
// that calls its API, a script included, ever has a guess made for it.
// A prefix is a convenience for a person typing, so it is resolved where
// the person is, from the same admin socket's list of what ipamd holds,
// and the request carries the full ID the answer then names.
func (a *app) release(ctx context.Context, f releaseFlags, typed string) error {
	adm := a.adminClient()
	pods, err := adm.Pods(ctx)
	if err != nil {
		return err
	}
	target, err := resolveAttachment(pods.Pods, typed, f.network, f.ifName)
	if err != nil {
		return err
	}
	req := schema.ReleaseRequest{Network: target.Network, SandboxID: target.SandboxID, IfName: target.IfName, Force: f.force}
	v, err := adm.Release(ctx, req)
	if err != nil {
		return err
	}
	return a.print(v, func() error { return renderRelease(a, v) })
}

// resolveAttachment picks the one attachment ipamd holds whose sandbox ID
// is typed, or begins with it, on interface ifName (and network, when
// given). A full ID wins over longer IDs it is a prefix of.
func resolveAttachment(pods []schema.Pod, typed, network, ifName string) (schema.Pod, error) {
	on := func(p schema.Pod) bool { return p.IfName == ifName && (network == "" || p.Network == network) }
	var exact, prefixed []schema.Pod
	for _, p := range pods {
		switch {
		case !on(p):
		case p.SandboxID == typed:
			exact = append(exact, p)
		case strings.HasPrefix(p.SandboxID, typed):
			prefixed = append(prefixed, p)
		}
	}
	matches := exact
	if len(exact) == 0 {
		if len(typed) < minIDPrefix && len(prefixed) > 0 {
			return schema.Pod{}, fmt.Errorf("sandbox %q: %w: give at least %d characters of the ID", typed, errSandboxPrefixTiny, minIDPrefix)
		}
		matches = prefixed
	}
	where := "interface " + ifName
	if network != "" {
		where = "network " + network + " " + where
	}
	switch len(matches) {
	case 0:
		return schema.Pod{}, fmt.Errorf("sandbox ID or prefix %q on %s: %w (see ipamctl pods)", typed, where, errNoSuchSandbox)
	case 1:
		return matches[0], nil
	}
	names := make([]string, 0, len(matches))
	for _, p := range matches {
		names = append(names, fmt.Sprintf("%s (network %s, %s)", p.SandboxID, p.Network, podLabel(p)))
	}
	slices.Sort(names)
	return schema.Pod{}, fmt.Errorf("sandbox %q on %s: %w: %s; give more of the ID, or --network", typed, where, errAmbiguousSandbox, strings.Join(names, ", "))
}

func renderRelease(a *app, v schema.Release) error {
	p := v.Released
	fmt.Fprintf(a.stdout, "released %s of sandbox %s (%s)\n", strings.Join(p.IPs, ", "), p.SandboxID, podLabel(p))
	if v.Forced {
		for _, e := range v.Evidence {
			fmt.Fprintf(a.stdout, "forced over: %s\n", e)
		}
		if len(v.Quarantined) > 0 {
			fmt.Fprintf(a.stdout, "quarantined while still shown in use: %s\n", strings.Join(v.Quarantined, ", "))
		}
	}
	return nil
}

func podLabel(p schema.Pod) string {
	if p.Name == "" {
		return "pod unknown"
	}
	return "pod " + p.Namespace + "/" + p.Name
}
