// Command conformance proves that a runtime adapter binary obeys the
// adapter contract against a real container runtime. It maps its flags onto
// cli.Options; the suite itself is package conformance.
//
// The binary links package testing only because hashicorp/go-plugin, the
// transport every adapter host uses (ipamd too), imports it in its
// testing.go; no package of this project that it links imports testing
// (the Go-test entry point is package conformance/conformancetest).
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/sandboxipam/sandboxipam/conformance"
	"github.com/sandboxipam/sandboxipam/conformance/cli"
	"github.com/sandboxipam/sandboxipam/internal/version"
)

const usage = `conformance proves that a runtime adapter reports every pod under its infra
sandbox ID, the ID the CNI plugin receives, against a real container runtime.

Usage:
  conformance run --adapter PATH [flags]   run the checks
  conformance list                         show every check: ID, statement, rule

The adapter is launched as ipamd launches it (a go-plugin subprocess). A
fixture creates real pods in the runtime the adapter reads: --fixture docker
(dockershim-style pods through the Docker Engine API) or --fixture cri (pods
through a CRI socket, e.g. containerd's). --endpoint is the runtime's socket:
the fixture uses it, and the adapter gets it as --endpoint=URI. Every pod,
container and process a check creates is removed when the check ends, also
on failure and on Ctrl-C (press it again to quit without cleaning up).

Examples:
  conformance run --adapter ./docker --fixture docker --endpoint unix:///var/run/docker.sock \
      --pod-cidr 198.18.0.0/16
  conformance run --adapter ./docker --fixture docker --benchmark --scale 200 --json bench.json
  conformance run --adapter ./dockershim --adapter-arg=--runtime-name=containerd \
      --fixture cri --endpoint unix:///run/containerd/containerd.sock --junit report.xml

Exit status: 0 every check that ran passed, 1 a check failed (or the run was
interrupted or could not start), 2 the command line is wrong.

Flags of run:
`

func main() {
	if version.Requested(os.Args[1:]) {
		fmt.Println(version.Line("conformance"))
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	// The first Ctrl-C ends the run and cleans up; unregistering then lets
	// a second one kill the process at once.
	context.AfterFunc(ctx, stop)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	flags, opts := newFlagSet(stderr)
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		flags.SetOutput(stdout)
		flags.Usage()
		if len(args) == 0 {
			return cli.ExitUsage
		}
		return cli.ExitPass
	}
	switch args[0] {
	case "list":
		cli.PrintChecks(stdout)
		return cli.ExitPass
	case "run":
		if err := flags.Parse(args[1:]); err != nil {
			if err == flag.ErrHelp {
				return cli.ExitPass
			}
			return cli.ExitUsage
		}
		if flags.NArg() > 0 {
			fmt.Fprintf(stderr, "unexpected arguments: %s\n", strings.Join(flags.Args(), " "))
			return cli.ExitUsage
		}
		return cli.Run(ctx, *opts, stdout, stderr)
	default:
		fmt.Fprintf(stderr, "unknown command %q; run 'conformance --help'\n", args[0])
		return cli.ExitUsage
	}
}

func newFlagSet(stderr io.Writer) (*flag.FlagSet, *cli.Options) {
	opts := &cli.Options{}
	flags := flag.NewFlagSet("conformance run", flag.ContinueOnError)
	flags.SetOutput(stderr)
	flags.Usage = func() {
		fmt.Fprint(flags.Output(), usage)
		flags.PrintDefaults()
	}
	flags.StringVar(&opts.Adapter, "adapter", "", "adapter binary to test (required)")
	flags.Var((*stringList)(&opts.AdapterArgs), "adapter-arg", "argument for the adapter, repeatable, e.g. --adapter-arg=--cri")
	flags.StringVar(&opts.AdapterSHA256, "adapter-sha256", "", "pin the adapter binary's SHA-256, as ipamd can")
	flags.StringVar(&opts.Fixture, "fixture", cli.FixtureNone, "how pods are created: docker, cri, or none (checks that need pods are skipped)")
	flags.StringVar(&opts.Endpoint, "endpoint", "", "runtime socket URI for the fixture and the adapter (default: "+
		cli.DefaultDockerEndpoint+" for docker, "+cli.DefaultCRIEndpoint+" for cri)")
	flags.StringVar(&opts.EndpointFlag, "endpoint-flag", cli.DefaultEndpointFlag, "the adapter's flag that takes the endpoint URI")
	flags.Var((*stringList)(&opts.WrongRuntimeArgs), "wrong-runtime-arg", "argument, repeatable, appended after the usual ones to make the adapter expect another runtime than the endpoint's "+
		"(e.g. --wrong-runtime-arg=--runtime-name=cri-o) or to point it at another runtime's socket; enables wrong-runtime-refused "+
		"(default with --fixture docker: the endpoint flag pointing at Docker's own containerd)")
	flags.StringVar(&opts.NoCRIEndpoint, "no-cri-endpoint", "", "socket URI of a containerd whose CRI plugin is disabled, as Docker's own is; enables containerd-without-cri-refused "+
		"(default with --fixture docker: the containerd the Engine runs on, found beside its socket, under /var/run/docker or at /run/containerd)")
	flags.StringVar(&opts.PlainDockerHost, "plain-docker-host", "", "with --fixture cri against cri-dockerd, the Docker Engine's socket URI behind it: "+
		"no-plain-containers runs a container there that belongs to no pod (default: none, and that check skips)")
	flags.StringVar(&opts.PauseImage, "pause-image", "", "image of the pods' sandboxes, already present in the runtime (default: the fixture's)")
	flags.StringVar(&opts.AppImage, "app-image", "", "image of the pods' app containers with --fixture cri, run with its own entrypoint (default: the pause image)")
	flags.StringVar(&opts.PodCIDR, "pod-cidr", "", "with --fixture docker, give each pod an address from this CIDR in its sandbox's network namespace "+
		"(needs root), so pod-ips-match can run; an IPv4 and an IPv6 CIDR, comma-separated, make some pods dual-stack and some IPv6-only; "+
		"a CRI runtime's own CNI config gives pods theirs")
	flags.StringVar(&opts.RuntimeStopCommand, "runtime-stop-cmd", "", "shell command that stops the runtime, keeping its pods (e.g. 'systemctl stop containerd'); "+
		"with --runtime-start-cmd enables runtime-restart")
	flags.StringVar(&opts.RuntimeStartCommand, "runtime-start-cmd", "", "shell command that starts the runtime again")
	flags.BoolVar(&opts.Benchmark, "benchmark", false, "run no checks: create --scale pods and report ListSandboxes and GetSandbox latency "+
		"percentiles and the adapter's memory, without pass or fail")
	flags.StringVar(&opts.CgroupParent, "cgroup-parent", "", "cgroup parent of every pod the fixture creates (default: the runtime's)")
	flags.BoolVar(&opts.WithoutPodLabels, "without-pod-labels", false, "with --fixture cri, leave out kubelet's io.kubernetes.pod.* labels")
	flags.StringVar(&opts.Namespace, "namespace", conformance.DefaultNamespace, "Kubernetes namespace of the pods the checks create (a few go to kube-system too)")
	flags.StringVar(&opts.Focus, "focus", "", "run only the checks whose ID matches this regular expression")
	flags.StringVar(&opts.Skip, "skip", "", "skip the checks whose ID matches this regular expression")
	flags.IntVar(&opts.Scale, "scale", 200, "pods the scale-listing check creates; 0 skips it")
	flags.DurationVar(&opts.Timeout, "timeout", 0, "bound on each adapter call (default 30s)")
	flags.StringVar(&opts.JUnitPath, "junit", "", "write a JUnit XML report to this file")
	flags.StringVar(&opts.JSONPath, "json", "", "write a JSON report to this file")
	flags.BoolVar(&opts.Verbose, "verbose", false, "log the suite's and the adapter's logs to stderr")
	return flags, opts
}

// stringList is a repeatable string flag.
type stringList []string

func (l *stringList) String() string { return strings.Join(*l, " ") }

func (l *stringList) Set(v string) error {
	*l = append(*l, v)
	return nil
}
