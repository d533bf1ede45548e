// Command ipamd is the node IPAM daemon: it records every pod IP under the
// pod's infra sandbox ID and serves the CNI plugin on a unix socket.
//
//	ipamd --config /etc/sandboxipam/ipamd.yaml
//	ipamd config-reference     # every field, its IPAMD_* variable, its default
//
// See docs/architecture.md for where this package sits and the life of an
// ADD, a DEL, a reconcile pass and a restart through it.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"text/tabwriter"

	"github.com/sandboxipam/sandboxipam/internal/version"
	"github.com/sandboxipam/sandboxipam/ipamd/config"
	"github.com/sandboxipam/sandboxipam/ipamd/daemon"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("ipamd", flag.ContinueOnError)
	fs.SetOutput(stderr)
	configPath := fs.String("config", "", "YAML config `file` (optional: defaults and IPAMD_* variables apply)")
	showVersion := fs.Bool("version", false, "print the version and exit")
	fs.Usage = func() { usage(fs, stderr) }
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return 0
		}
		return 2
	}
	switch {
	case *showVersion:
		fmt.Fprintln(stdout, "ipamd", version.String())
		return 0
	case fs.Arg(0) == "config-reference":
		printReference(stdout)
		return 0
	case fs.NArg() > 0:
		fmt.Fprintf(stderr, "ipamd: unknown argument %q (try ipamd --help)\n", fs.Arg(0))
		return 2
	}
	cfg, err := config.Load(*configPath, os.Environ())
	if err != nil {
		fmt.Fprintln(stderr, "ipamd:", err)
		return 2
	}
	logger := daemon.NewLogger(cfg.Log, stderr)
	logger.Info("ipamd starting", "version", version.String(), "config", *configPath)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if err := daemon.Run(ctx, cfg, daemon.Options{Logger: logger}); err != nil {
		logger.Error("ipamd failed", "error", err)
		return 1
	}
	return 0
}

func usage(fs *flag.FlagSet, w io.Writer) {
	fmt.Fprint(w, `ipamd records every pod IP under the pod's infra sandbox ID, serves the CNI
plugin on a unix socket, and reclaims the IPs of pods the container runtime
no longer has (asking it through a runtime adapter plugin).

Usage:
  ipamd [--config FILE]       run the daemon (SIGTERM/SIGINT stop it cleanly)
  ipamd config-reference      list every config field, its variable and default
  ipamd --version

Flags:
`)
	fs.PrintDefaults()
	fmt.Fprint(w, `
Every config field can be set in the YAML file or by an environment variable
named after its YAML path, e.g. runtime.endpoint -> IPAMD_RUNTIME_ENDPOINT
and ipSource.aws.warmIPTarget -> IPAMD_IPSOURCE_AWS_WARMIPTARGET. The AWS VPC
CNI's WARM_IP_TARGET, MINIMUM_IP_TARGET and WARM_ENI_TARGET are accepted as
aliases of the three aws pool targets; an IPAMD_ variable wins over its alias.
The config is validated at start; each error names the field.

Config fields:
`)
	printReference(w)
}

func printReference(w io.Writer) {
	tw := tabwriter.NewWriter(w, 2, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "  FIELD\tVARIABLE\tDEFAULT\tMEANING")
	for _, f := range config.Reference() {
		def := f.Default
		if def == "" {
			def = `""`
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", f.Path, f.Env, def, f.Desc)
	}
	tw.Flush()
	var aliases []config.Field
	for _, f := range config.Reference() {
		if f.Alias != "" {
			aliases = append(aliases, f)
		}
	}
	if len(aliases) == 0 {
		return
	}
	fmt.Fprintln(w, "\nAliases (the AWS VPC CNI's names; when both are set, the IPAMD_ variable wins):")
	tw = tabwriter.NewWriter(w, 2, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "  ALIAS\tVARIABLE\tFIELD")
	for _, f := range aliases {
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", f.Alias, f.Env, f.Path)
	}
	tw.Flush()
}
