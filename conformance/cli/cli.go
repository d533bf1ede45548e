// Package cli is the conformance command line: it turns the command's
// Options into a conformance.Config and a fixture, runs the suite, prints a
// readable report and writes JUnit XML and JSON on request. The command's
// main only maps flags onto Options (after csi-test's cmd/csi-sanity).
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/sandboxipam/sandboxipam/conformance"
	"github.com/sandboxipam/sandboxipam/conformance/fixture"
)

// Exit codes of the conformance command.
const (
	ExitPass  = 0 // every check that ran passed
	ExitFail  = 1 // a check failed, the run was interrupted, or it could not run
	ExitUsage = 2 // the command line is wrong
)

// Fixture kinds Options.Fixture accepts.
const (
	FixtureDocker = "docker"
	FixtureCRI    = "cri"
	FixtureNone   = "none"
)

// Default endpoints when Options.Endpoint is empty and a fixture needs one.
const (
	DefaultDockerEndpoint = "unix:///var/run/docker.sock"
	DefaultCRIEndpoint    = "unix:///run/containerd/containerd.sock"
	// DefaultEndpointFlag is how this project's adapters take their
	// endpoint.
	DefaultEndpointFlag = "--endpoint"
)

// ErrUsage is wrapped by every error Options.Validate returns.
var ErrUsage = errors.New("usage")

// Options are the `conformance run` flags.
type Options struct {
	// Adapter is the adapter binary. Required.
	Adapter string
	// AdapterArgs are passed to the adapter before the endpoint flag.
	AdapterArgs []string
	// AdapterSHA256 pins the binary's checksum. Default: not pinned.
	AdapterSHA256 string
	// Fixture is docker, cri or none. Default none: the checks that need
	// pods are skipped.
	Fixture string
	// Endpoint is given to the adapter (EndpointFlag URI) and used by the
	// fixture to create pods. Default: DefaultDockerEndpoint or
	// DefaultCRIEndpoint for those fixtures; with no fixture, none is
	// passed and the adapter uses its own default.
	Endpoint string
	// EndpointFlag is the adapter's endpoint flag. Default
	// DefaultEndpointFlag.
	EndpointFlag string
	// WrongRuntimeArgs, when set, are appended after the adapter's usual
	// arguments (endpoint included; a flag given later wins) to make it
	// expect another runtime than the endpoint's, or point it at another
	// runtime's socket, for the wrong-runtime-refused check. Default: with
	// --fixture docker, the endpoint flag pointing at NoCRIEndpoint (Docker's
	// own containerd is another runtime than Docker); otherwise none, and
	// that check is skipped.
	WrongRuntimeArgs []string
	// NoCRIEndpoint is a containerd socket URI whose CRI plugin is
	// disabled (Docker's own), for containerd-without-cri-refused.
	// Default: with --fixture docker, the containerd the Engine runs on,
	// found beside its socket, under its exec root or at containerd's
	// default socket (one that answers containerd's API and refuses CRI);
	// otherwise none, and that check is skipped.
	NoCRIEndpoint string
	// PauseImage, AppImage and CgroupParent are the fixture's (see
	// fixture.DockerConfig and fixture.CRIConfig). Defaults: theirs.
	PauseImage   string
	AppImage     string
	CgroupParent string
	// WithoutPodLabels makes the CRI fixture leave out kubelet's
	// io.kubernetes.pod.* labels, proving the adapter reads the pod's
	// identity from sandbox metadata.
	WithoutPodLabels bool
	// PlainDockerHost, with the CRI fixture, is the Docker Engine behind a
	// cri-dockerd endpoint: the no-plain-containers check runs a container
	// there that belongs to no pod (fixture.CRIConfig.PlainDockerHost).
	// Default: none.
	PlainDockerHost string
	// PodCIDR gives every docker-fixture pod an address from this range
	// in its sandbox's network namespace, for the pod-ips-match check (see
	// fixture.DockerConfig.PodAddresses). Two ranges, an IPv4 and an IPv6
	// one separated by a comma, make the run's pods dual-stack, IPv6-only
	// and IPv4-only side by side (fixture.DockerConfig.PodAddresses6).
	// Default: none.
	PodCIDR string
	// RuntimeStopCommand and RuntimeStartCommand, both set, are shell
	// commands (sh -c) that stop and start the runtime behind Endpoint
	// without losing its pods, e.g. "systemctl stop containerd"; they
	// enable the runtime-restart check. Default: none, and it is skipped.
	RuntimeStopCommand, RuntimeStartCommand string
	// Benchmark measures instead of checking (conformance.Config.Benchmark)
	// with Scale pods.
	Benchmark bool
	// Namespace is the pods' Kubernetes namespace; a few go to
	// conformance.SystemNamespace besides. Default
	// conformance.DefaultNamespace.
	Namespace string
	// Focus and Skip select checks by ID (regular expressions).
	Focus, Skip string
	// Scale is the scale check's pod count; 0 skips that check.
	Scale int
	// Timeout bounds each adapter call. Default conformance.DefaultTimeout.
	Timeout time.Duration
	// JUnitPath and JSONPath, when set, receive the report.
	JUnitPath, JSONPath string
	// Verbose logs the suite's and the adapter's logs to stderr.
	Verbose bool
}

// Validate reports the first wrong option, naming its flag.
func (o Options) Validate() error {
	switch {
	case o.Adapter == "":
		return fmt.Errorf("%w: --adapter is required", ErrUsage)
	case !slices.Contains([]string{"", FixtureDocker, FixtureCRI, FixtureNone}, o.Fixture):
		return fmt.Errorf("%w: --fixture must be one of docker, cri, none, got %q", ErrUsage, o.Fixture)
	case o.Scale < 0:
		return fmt.Errorf("%w: --scale must not be negative, got %d", ErrUsage, o.Scale)
	case o.Timeout < 0:
		return fmt.Errorf("%w: --timeout must not be negative, got %s", ErrUsage, o.Timeout)
	case (o.RuntimeStopCommand == "") != (o.RuntimeStartCommand == ""):
		return fmt.Errorf("%w: --runtime-stop-cmd and --runtime-start-cmd go together, got only one", ErrUsage)
	}
	if o.PodCIDR != "" {
		if _, _, err := podCIDRs(o.PodCIDR); err != nil {
			return fmt.Errorf("%w: --pod-cidr must be a CIDR such as 198.18.0.0/16, or an IPv4 and an IPv6 one such as 198.18.0.0/16,fd00:18::/64, got %q: %w",
				ErrUsage, o.PodCIDR, err)
		}
		if o.Fixture != FixtureDocker {
			return fmt.Errorf("%w: --pod-cidr needs --fixture docker (a CRI runtime's CNI gives pods their addresses), got --fixture %q", ErrUsage, o.Fixture)
		}
	}
	for flagName, expr := range map[string]string{"--focus": o.Focus, "--skip": o.Skip} {
		if _, err := compileOptional(expr); err != nil {
			return fmt.Errorf("%w: %s: %w", ErrUsage, flagName, err)
		}
	}
	return nil
}

// Run runs the suite as the command does and returns the exit code.
// Usage errors are printed to stderr; the report goes to stdout.
func Run(ctx context.Context, opts Options, stdout, stderr io.Writer) int {
	if err := opts.Validate(); err != nil {
		fmt.Fprintln(stderr, err)
		return ExitUsage
	}
	opts = opts.withDefaults()
	opts = opts.withDockerContainerd(ctx, stdout)
	logger := newLogger(opts.Verbose, stderr)
	fix, closeFixture, err := newFixture(ctx, opts)
	if err != nil {
		fmt.Fprintf(stderr, "conformance: %v\n", err)
		return ExitFail
	}
	defer closeFixture(logger)
	cfg, err := opts.config(fix, logger)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return ExitUsage
	}
	fmt.Fprintf(stdout, "adapter: %s %v\nfixture: %s\n\n", cfg.AdapterPath, cfg.AdapterArgs, opts.Fixture)
	report, err := conformance.RunChecks(ctx, cfg, conformance.NewTextReporter(stdout))
	if err != nil {
		fmt.Fprintln(stderr, err)
		return ExitUsage
	}
	fmt.Fprint(stdout, conformance.FormatSummary(report))
	if err := writeReports(opts, report); err != nil {
		fmt.Fprintf(stderr, "conformance: %v\n", err)
		return ExitFail
	}
	if report.Failed() || report.Interrupted {
		return ExitFail
	}
	return ExitPass
}

// withDefaults fills the fixture kind, endpoint and endpoint flag.
func (o Options) withDefaults() Options {
	if o.Fixture == "" {
		o.Fixture = FixtureNone
	}
	if o.EndpointFlag == "" {
		o.EndpointFlag = DefaultEndpointFlag
	}
	if o.Endpoint == "" {
		switch o.Fixture {
		case FixtureDocker:
			o.Endpoint = DefaultDockerEndpoint
		case FixtureCRI:
			o.Endpoint = DefaultCRIEndpoint
		}
	}
	if o.Scale == 0 {
		o.Scale = -1 // conformance.Config: negative skips the scale check
	}
	return o
}

// withDockerContainerd fills NoCRIEndpoint and WrongRuntimeArgs for the
// docker fixture from the containerd the Engine runs on, so that a plain
// `--fixture docker` run holds the adapter to both checks, and says what it
// found.
func (o Options) withDockerContainerd(ctx context.Context, stdout io.Writer) Options {
	if o.Fixture != FixtureDocker || (o.NoCRIEndpoint != "" && len(o.WrongRuntimeArgs) > 0) {
		return o
	}
	found := o.NoCRIEndpoint
	if found == "" {
		found = findDockerContainerd(ctx, o.Endpoint)
	}
	if found == "" {
		fmt.Fprintf(stdout, "no containerd without CRI found for the Engine at %s: give --no-cri-endpoint and --wrong-runtime-arg\n", o.Endpoint)
		return o
	}
	if o.NoCRIEndpoint == "" {
		o.NoCRIEndpoint = found
		fmt.Fprintf(stdout, "containerd without CRI (Docker's own): %s\n", found)
	}
	if len(o.WrongRuntimeArgs) == 0 {
		o.WrongRuntimeArgs = []string{o.EndpointFlag + "=" + found}
		fmt.Fprintf(stdout, "wrong runtime for the docker fixture: %s\n", found)
	}
	return o
}

// config maps the options onto the suite's Config.
func (o Options) config(fix fixture.Fixture, logger *slog.Logger) (conformance.Config, error) {
	focus, err := compileOptional(o.Focus)
	if err != nil {
		return conformance.Config{}, err
	}
	skip, err := compileOptional(o.Skip)
	if err != nil {
		return conformance.Config{}, err
	}
	cfg := conformance.Config{
		AdapterPath:   o.Adapter,
		AdapterArgs:   o.withEndpoint(o.AdapterArgs, o.Endpoint),
		AdapterSHA256: o.AdapterSHA256,
		Fixture:       fix,
		Namespace:     o.Namespace,
		EndpointArgs:  func(endpoint string) []string { return o.withEndpoint(o.AdapterArgs, endpoint) },
		NoCRIEndpoint: o.NoCRIEndpoint,
		Scale:         o.Scale,
		Focus:         focus,
		Skip:          skip,
		Timeout:       o.Timeout,
		Benchmark:     o.Benchmark,
		Logger:        logger,
	}
	if len(o.WrongRuntimeArgs) > 0 {
		cfg.WrongRuntimeArgs = append(cfg.AdapterArgs[:len(cfg.AdapterArgs):len(cfg.AdapterArgs)], o.WrongRuntimeArgs...)
	}
	return cfg, nil
}

// withEndpoint returns args followed by the endpoint flag, when endpoint
// is set.
func (o Options) withEndpoint(args []string, endpoint string) []string {
	out := slices.Clone(args)
	if endpoint != "" {
		out = append(out, o.EndpointFlag+"="+endpoint)
	}
	return out
}

// newFixture builds the fixture the options name and a func that cleans it
// up, on a context of its own so that Ctrl-C still removes every pod.
func newFixture(ctx context.Context, o Options) (fixture.Fixture, func(*slog.Logger), error) {
	var fix interface {
		fixture.Fixture
		Close() error
	}
	var err error
	switch o.Fixture {
	case FixtureDocker:
		addrs, addrs6, _ := podCIDRs(o.PodCIDR) // checked by Validate
		fix, err = fixture.NewDocker(ctx, fixture.DockerConfig{Host: o.Endpoint, PauseImage: o.PauseImage,
			CgroupParent: o.CgroupParent, PodAddresses: addrs, PodAddresses6: addrs6})
	case FixtureCRI:
		fix, err = fixture.NewCRI(ctx, fixture.CRIConfig{Endpoint: o.Endpoint, PauseImage: o.PauseImage,
			AppImage: o.AppImage, CgroupParent: o.CgroupParent, WithoutPodLabels: o.WithoutPodLabels, PlainDockerHost: o.PlainDockerHost})
	default:
		return nil, func(*slog.Logger) {}, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("%s fixture at %s: %w", o.Fixture, o.Endpoint, err)
	}
	var withControl fixture.Fixture = fix
	if o.RuntimeStopCommand != "" {
		withControl = fixture.WithRuntimeControl(fix, shellCommand(o.RuntimeStopCommand), shellCommand(o.RuntimeStartCommand))
	}
	cleanup := func(logger *slog.Logger) {
		// The final sweep removes whatever the checks' own releases left,
		// as much as a scale check's pods: the same bound as theirs.
		cleanupCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), conformance.DefaultCleanupTimeout)
		defer cancel()
		if err := fix.Cleanup(cleanupCtx); err != nil {
			logger.Error("fixture clean-up left resources behind", "err", err)
		}
		_ = fix.Close()
	}
	return withControl, cleanup, nil
}

// shellCommand runs command with sh -c, its output in the error.
func shellCommand(command string) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		out, err := exec.CommandContext(ctx, "sh", "-c", command).CombinedOutput()
		if err != nil {
			return fmt.Errorf("%q: %w: %s", command, err, strings.TrimSpace(string(out)))
		}
		return nil
	}
}

// writeReports writes the JUnit and JSON files the options ask for.
func writeReports(o Options, report conformance.Report) error {
	writers := []struct {
		path  string
		write func(io.Writer, conformance.Report) error
	}{{o.JUnitPath, conformance.WriteJUnit}, {o.JSONPath, conformance.WriteJSON}}
	for _, w := range writers {
		if w.path == "" {
			continue
		}
		if err := writeFile(w.path, report, w.write); err != nil {
			return err
		}
	}
	return nil
}

// writeFile creates path and writes the report into it.
func writeFile(path string, report conformance.Report, write func(io.Writer, conformance.Report) error) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	if err := write(f, report); err != nil {
		_ = f.Close()
		return fmt.Errorf("write report %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write report %s: %w", path, err)
	}
	return nil
}

// compileOptional compiles expr, or returns nil for an empty one.
func compileOptional(expr string) (*regexp.Regexp, error) {
	if expr == "" {
		return nil, nil
	}
	re, err := regexp.Compile(expr)
	if err != nil {
		return nil, fmt.Errorf("invalid regular expression %q: %w", expr, err)
	}
	return re, nil
}

// newLogger logs to stderr when verbose, and discards otherwise: the
// adapters' own errors against the deliberately broken endpoints would
// drown the report.
func newLogger(verbose bool, stderr io.Writer) *slog.Logger {
	if !verbose {
		return slog.New(slog.DiscardHandler)
	}
	return slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// PrintChecks writes every check's ID, rule and statement, for
// `conformance list`.
func PrintChecks(w io.Writer) {
	for _, check := range conformance.Checks() {
		fmt.Fprintf(w, "%-30s %s\n%-30s [%s]\n", check.ID, check.Statement, "", check.Rule)
	}
}

// podCIDRs parses --pod-cidr: one range, or an IPv4 and an IPv6 range
// separated by a comma, returned as the docker fixture's PodAddresses and
// PodAddresses6. Empty gives none.
func podCIDRs(value string) (netip.Prefix, netip.Prefix, error) {
	if value == "" {
		return netip.Prefix{}, netip.Prefix{}, nil
	}
	parts := strings.Split(value, ",")
	if len(parts) > 2 {
		return netip.Prefix{}, netip.Prefix{}, fmt.Errorf("%d ranges, want one or two", len(parts))
	}
	prefixes := make([]netip.Prefix, len(parts))
	for i, part := range parts {
		prefix, err := netip.ParsePrefix(strings.TrimSpace(part))
		if err != nil {
			return netip.Prefix{}, netip.Prefix{}, err
		}
		prefixes[i] = prefix
	}
	if len(prefixes) == 1 {
		return prefixes[0], netip.Prefix{}, nil
	}
	slices.SortFunc(prefixes, func(a, b netip.Prefix) int { return a.Addr().Compare(b.Addr()) }) // IPv4 first
	if !prefixes[0].Addr().Is4() || !prefixes[1].Addr().Is6() {
		return netip.Prefix{}, netip.Prefix{}, fmt.Errorf("two ranges of one family, want an IPv4 and an IPv6 one")
	}
	return prefixes[0], prefixes[1], nil
}
