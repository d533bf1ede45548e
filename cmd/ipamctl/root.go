package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/sandboxipam/sandboxipam/internal/version"
	"github.com/sandboxipam/sandboxipam/ipamd/introspect/client"
)

// Exit codes: see the package doc.
const (
	exitOK          = 0
	exitFailed      = 1
	exitUsage       = 2
	exitNotCompared = 3
)

// errUsage marks a command line ipamctl cannot run (exit 2).
var errUsage = errors.New("usage")

// errNotCompared: check compared what it could and found no disagreement,
// but could not compare everything (exit 3).
var errNotCompared = errors.New("check incomplete")

const rootLong = `ipamctl asks the node's ipamd what it holds.

The reads (pods, pool, adapter, enis, routes, check, who, ready) go to ipamd's
introspection address (--addr): loopback TCP, reachable by every local process
and every hostNetwork pod, so it serves reads only.

reconcile and release change ipamd's state, so ipamd serves them only on its
admin socket (--admin-socket): a unix socket that only root and ipamd's own uid
may use, checked by the kernel's peer credentials. Run them as root on the node
(or in ipamd's container).

Flags go before or after the command, as in kubectl.

Exit codes:
  0  done (check: everything compared, and it agrees)
  1  an error; check found a disagreement, check --cluster a finding;
     ready found ipamd not ready
  2  usage: an unknown command or flag, a bad value, a missing argument
  3  check found no disagreement but could not compare something (the
     runtime down, no adapter, the kernel unreadable; with --cluster, a
     node's ipamd it could not read); its first line says what`

const rootExample = `  ipamctl pods                          # is pod X's IP held under its sandbox ID?
  ipamctl pool -o json | jq .free
  ipamctl check || page-someone         # 1: ipamd, runtime and kernel disagree; 3: it could not compare one
  ipamctl check --cluster -o json       # 1 when one address is on two pods, anywhere
  ipamctl who 10.0.0.7                  # who has it, and who had it before
  ipamctl ready                         # can ipamd serve ADD? if not, why
  sudo ipamctl reconcile --dry-run
  sudo ipamctl release --force 93e629d853d9  # a unique prefix of the sandbox ID; only when you know better than the runtime`

// app is one invocation of ipamctl: where it prints, its global flags,
// and whether a command began to run (an error before that is the
// command line's, exit 2).
type app struct {
	stdout, stderr io.Writer
	addr, admin    string
	output         outputFormat
	timeout        time.Duration
	started        bool
}

// run executes ipamctl with args and returns its exit code.
func run(args []string, stdout, stderr io.Writer) int {
	a := &app{stdout: stdout, stderr: stderr, output: outputTable}
	root := a.rootCommand(os.Getenv)
	if len(args) == 0 { // cobra would print the help and exit 0
		root.SetOut(stderr)
		_ = root.Help()
		return exitUsage
	}
	root.SetArgs(args)
	cmd, err := root.ExecuteC()
	code := a.exitCode(err)
	if err != nil {
		fmt.Fprintln(stderr, "ipamctl:", err)
		if code == exitUsage {
			fmt.Fprintf(stderr, "see '%s --help'\n", cmd.CommandPath())
		}
	}
	return code
}

func (a *app) exitCode(err error) int {
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, errUsage) || !a.started:
		return exitUsage
	case errors.Is(err, errNotCompared):
		return exitNotCompared
	default:
		return exitFailed
	}
}

func (a *app) rootCommand(getenv func(string) string) *cobra.Command {
	root := &cobra.Command{
		Use:     "ipamctl",
		Short:   "ipamctl asks the node's ipamd what it holds",
		Long:    rootLong,
		Example: rootExample,
		Version: version.String(),
		// No RunE: a subcommand ipamctl does not know is cobra's "unknown
		// command", an error before any RunE starts (exit 2).
		SilenceErrors: true,
		SilenceUsage:  true,
	}
	root.SetVersionTemplate("{{.Name}} {{.Version}}\n")
	root.SetOut(a.stdout)
	root.SetErr(a.stderr)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return fmt.Errorf("%w: %w", errUsage, err) })
	a.globalFlags(root, getenv)
	root.AddCommand(a.podsCommand(), a.poolCommand(), a.adapterCommand(), a.enisCommand(), a.routesCommand(),
		a.whoCommand(), a.readyCommand(), a.checkCommand(), a.reconcileCommand(), a.releaseCommand(),
		a.confirmNodeGoneCommand())
	return root
}

// globalFlags are the flags every command takes, before or after its name.
func (a *app) globalFlags(root *cobra.Command, getenv func(string) string) {
	pf := root.PersistentFlags()
	pf.StringVar(&a.addr, "addr", envOr(getenv, "IPAMCTL_ADDR", client.DefaultAddr),
		"ipamd's introspection host:port, for the reads (env IPAMCTL_ADDR)")
	pf.StringVar(&a.admin, "admin-socket", envOr(getenv, "IPAMCTL_ADMIN_SOCKET", client.DefaultAdminSocket),
		"ipamd's admin socket path (introspection.adminSocket), for reconcile and release: they change state, so ipamd serves them only there, to root and its own uid (env IPAMCTL_ADMIN_SOCKET)")
	pf.VarP(&a.output, "output", "o", "output format: table or json")
	pf.DurationVar(&a.timeout, "timeout", 30*time.Second, "give up after this long")
	_ = root.RegisterFlagCompletionFunc("output", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return []string{string(outputTable), string(outputJSON)}, cobra.ShellCompDirectiveNoFileComp
	})
}

// runE wraps a command's body: it marks the command line as accepted
// (later errors are the command's, not usage) and bounds it by --timeout.
func (a *app) runE(body func(ctx context.Context, args []string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		a.started = true
		ctx, cancel := context.WithTimeout(cmd.Context(), a.timeout)
		defer cancel()
		return body(ctx, args)
	}
}

// reads is the client of the introspection address; admin, of the admin
// socket.
func (a *app) reads() *client.Client { return client.New(a.addr, nil) }
func (a *app) adminClient() *client.Client {
	return client.NewAdmin(a.admin)
}

// print writes v as JSON with -o json, else calls table.
func (a *app) print(v any, table func() error) error {
	if a.output == outputJSON {
		enc := json.NewEncoder(a.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	}
	return table()
}

// outputFormat is -o/--output, checked as it is parsed, so a bad value is
// a usage error naming the flag and the value.
type outputFormat string

const (
	outputTable outputFormat = "table"
	outputJSON  outputFormat = "json"
)

func (o *outputFormat) String() string { return string(*o) }
func (o *outputFormat) Type() string   { return "table|json" }
func (o *outputFormat) Set(v string) error {
	switch outputFormat(v) {
	case outputTable, outputJSON:
		*o = outputFormat(v)
		return nil
	}
	return errors.New("must be table or json")
}

// exactArgs wants n arguments, and names them when they are not there.
func exactArgs(n int, names string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != n {
			return fmt.Errorf("%w: %s wants %s, got %d argument(s)", errUsage, cmd.CommandPath(), names, len(args))
		}
		return nil
	}
}

func envOr(getenv func(string) string, name, def string) string {
	if v := getenv(name); v != "" {
		return v
	}
	return def
}
