// Command ipamctl shows what a node's ipamd holds, through ipamd's
// introspection API on loopback TCP, and asks it to reconcile or release,
// through ipamd's admin socket (root or ipamd's uid only).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/sandboxipam/sandboxipam/internal/version"
	"github.com/sandboxipam/sandboxipam/ipamd/introspect/client"
	"github.com/sandboxipam/sandboxipam/ipamd/introspect/schema"
)

func main() {
	if version.Requested(os.Args[1:]) {
		fmt.Println(version.Line("ipamctl"))
		return
	}
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

const help = `ipamctl asks the node's ipamd what it holds.

Usage:
  ipamctl [flags] pods                 every assigned IP, by infra sandbox ID
                                       (the key CNI DEL matches on)
  ipamctl [flags] pool                 addresses per group: total/assigned/cooling/free
  ipamctl [flags] adapter              the runtime adapter, its health and restarts,
                                       and the last reconcile pass
  ipamctl [flags] reconcile --dry-run  list the IPs a reconcile pass would release
  ipamctl [flags] reconcile            run a pass now: release IPs of sandboxes the
                                       runtime no longer has (older than the grace)
  ipamctl [flags] release SANDBOX-ID   free one attachment's address on your word
                                       (when the adapter is blind to a sandbox you
                                       know is gone); --network, --ifname eth0;
                                       refused while the runtime lists the sandbox
                                       or the runtime or the node shows its address
                                       in use, naming what shows it; --force
                                       overrides (logged, counted, and the address
                                       is quarantined while it is still shown)
  ipamctl [flags] enis                 the ENIs of the aws IP source
  ipamctl [flags] routes               the routes to other nodes' podCIDRs
                                       (routes.nodes), and the nodes skipped
  ipamctl [flags] check                compare ipamd's assignments, the runtime's
                                       sandboxes and the node's routes and veths;
                                       prints each disagreement, exits 1 on any
  ipamctl [flags] check --cluster [--kubeconfig PATH]
                                       compare the whole cluster through the
                                       Kubernetes API: blocks that overlap or lie
                                       outside their pool, blocks of nodes that are
                                       gone, pod addresses outside their node's
                                       blocks and podCIDRs, one address on two pods;
                                       exits 1 on any (kubeconfig from the flag,
                                       $KUBECONFIG, or the pod's service account)
  ipamctl [flags] who ADDRESS|SANDBOX-ID|POD-NAME
                                       who holds it, since when, its sandbox's state
                                       in the runtime, and ipamd's recent history of it

reconcile and release change ipamd's state, so ipamd serves them only on its
admin socket (--admin-socket): a unix socket that only root and ipamd's own uid
may use, checked by the kernel's peer credentials. The TCP address (--addr) is
reachable by every local process and every hostNetwork pod: it serves the reads
only. Run reconcile and release as root on the node (or in ipamd's container).

Examples:
  ipamctl pods                          # is pod X's IP held under its sandbox ID?
  ipamctl -o json pool | jq .free
  ipamctl check || page-someone         # 1 when ipamd, runtime and kernel disagree
  ipamctl check --cluster -o json       # 1 when one address is on two pods, anywhere
  ipamctl who 10.0.0.7                  # who has it, and who had it before
  sudo ipamctl reconcile --dry-run
  sudo ipamctl release --force 93e629d853d9  # only when you know better than the runtime

Flags:
`

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("ipamctl", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", envOr("IPAMCTL_ADDR", client.DefaultAddr), "ipamd's introspection `host:port`, for the reads (env IPAMCTL_ADDR)")
	admin := fs.String("admin-socket", envOr("IPAMCTL_ADMIN_SOCKET", client.DefaultAdminSocket),
		"ipamd's admin socket `path` (introspection.adminSocket), for reconcile and release: they change state, so ipamd serves them only there, to root and its own uid (env IPAMCTL_ADMIN_SOCKET)")
	output := fs.String("o", "table", "output `format`: table or json")
	timeout := fs.Duration("timeout", 30*time.Second, "give up after this long")
	fs.Usage = func() { fmt.Fprint(stderr, help); fs.PrintDefaults() }
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if *output != "table" && *output != "json" {
		fmt.Fprintf(stderr, "ipamctl: -o must be table or json, got %q\n", *output)
		return 2
	}
	if fs.NArg() == 0 {
		fs.Usage()
		return 2
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	cmd := command{client: client.New(*addr, nil), admin: client.NewAdmin(*admin), json: *output == "json", out: stdout}
	if err := cmd.run(ctx, fs.Arg(0), fs.Args()[1:]); err != nil {
		fmt.Fprintln(stderr, "ipamctl:", err)
		if errors.Is(err, errUsage) {
			return 2
		}
		return 1
	}
	return 0
}

var errUsage = errors.New("usage")

// errDisagree: ipamctl check found disagreements (exit 1).
var errDisagree = errors.New("disagreements between ipamd, the runtime and the kernel")

type command struct {
	// client reads over TCP; admin, on the admin socket, changes state.
	client, admin *client.Client
	json          bool
	out           io.Writer
}

func (c command) run(ctx context.Context, name string, args []string) error {
	switch name {
	case "pods":
		v, err := c.client.Pods(ctx)
		return c.print(v, err, func() error { return client.RenderPods(c.out, v) })
	case "pool":
		v, err := c.client.Pool(ctx)
		return c.print(v, err, func() error { return client.RenderPool(c.out, v) })
	case "adapter":
		v, err := c.client.Adapter(ctx)
		return c.print(v, err, func() error { return client.RenderAdapter(c.out, v) })
	case "enis":
		v, err := c.client.ENIs(ctx)
		return c.print(v, err, func() error { _, err := fmt.Fprintf(c.out, "%s\n", v); return err })
	case "routes":
		v, err := c.client.Routes(ctx)
		return c.print(v, err, func() error { return client.RenderRoutes(c.out, v) })
	case "reconcile":
		fs := flag.NewFlagSet("reconcile", flag.ContinueOnError)
		dryRun := fs.Bool("dry-run", false, "only report what would be released")
		if err := fs.Parse(args); err != nil {
			return fmt.Errorf("%w: reconcile [--dry-run]: %v", errUsage, err)
		}
		v, err := c.admin.Reconcile(ctx, *dryRun)
		if err != nil && v.At.IsZero() {
			return err
		}
		if perr := c.print(v, nil, func() error { return client.RenderReconcile(c.out, v) }); perr != nil {
			return perr
		}
		return err
	case "release":
		return c.release(ctx, args)
	case "check":
		return c.check(ctx, args)
	case "who":
		if len(args) != 1 {
			return fmt.Errorf("%w: who ADDRESS|SANDBOX-ID|POD-NAME", errUsage)
		}
		v, err := c.client.Who(ctx, args[0])
		return c.print(v, err, func() error { return client.RenderWho(c.out, v) })
	default:
		return fmt.Errorf("%w: unknown command %q (pods, pool, adapter, reconcile, release, enis, routes, check, who; see ipamctl --help)", errUsage, name)
	}
}

// release frees one attachment on the operator's word: the way out when
// the adapter is blind to a sandbox that is truly gone.
func (c command) release(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("release", flag.ContinueOnError)
	network := fs.String("network", "", "the attachment's CNI network (default: the one the pod's assignment shows in ipamctl pods)")
	ifName := fs.String("ifname", "eth0", "the attachment's interface name")
	force := fs.Bool("force", false, "release even though the runtime lists the sandbox or the runtime or the node shows its address in use; logged at WARN with your uid, counted, and the address is quarantined while it is still shown")
	if err := fs.Parse(args); err != nil || fs.NArg() != 1 {
		return fmt.Errorf("%w: release [--network NAME] [--ifname eth0] [--force] SANDBOX-ID", errUsage)
	}
	req := schema.ReleaseRequest{Network: *network, SandboxID: fs.Arg(0), IfName: *ifName, Force: *force}
	if req.Network == "" {
		pods, err := c.admin.Pods(ctx)
		if err != nil {
			return err
		}
		for _, p := range pods.Pods {
			if p.SandboxID == req.SandboxID && p.IfName == req.IfName {
				req.Network = p.Network
			}
		}
		if req.Network == "" {
			return fmt.Errorf("ipamd holds no address for sandbox %q interface %q", req.SandboxID, req.IfName)
		}
	}
	v, err := c.admin.Release(ctx, req)
	return c.print(v, err, func() error {
		p := v.Released
		fmt.Fprintf(c.out, "released %s of sandbox %s (%s)\n", strings.Join(p.IPs, ", "), p.SandboxID, podLabel(p))
		if v.Forced {
			for _, e := range v.Evidence {
				fmt.Fprintf(c.out, "forced over: %s\n", e)
			}
			if len(v.Quarantined) > 0 {
				fmt.Fprintf(c.out, "quarantined while still shown in use: %s\n", strings.Join(v.Quarantined, ", "))
			}
		}
		return nil
	})
}

func podLabel(p schema.Pod) string {
	if p.Name == "" {
		return "pod unknown"
	}
	return "pod " + p.Namespace + "/" + p.Name
}

func (c command) print(v any, err error, table func() error) error {
	if err != nil {
		return err
	}
	if c.json {
		enc := json.NewEncoder(c.out)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	}
	return table()
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}
