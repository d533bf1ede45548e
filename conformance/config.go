package conformance

import (
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"time"

	"github.com/sandboxipam/sandboxipam/conformance/fixture"
)

// Defaults applied by Config.withDefaults to zero fields.
const (
	// DefaultScale is how many pods the scale check creates: more than a
	// node usually runs, so an adapter that pages or truncates shows it.
	DefaultScale = 200
	// DefaultTimeout bounds every adapter call a check makes, so a hung
	// adapter fails one check instead of hanging the run.
	DefaultTimeout = 30 * time.Second
	// DefaultDeadlineSlack is how long past its deadline a call may take
	// to return before the deadline checks call it a hang: the deadline
	// crosses a gRPC hop into the plugin and the adapter's own client.
	DefaultDeadlineSlack = 2 * time.Second
	// DefaultCleanupTimeout bounds the release of one check's resources,
	// which runs on a context of its own so that Ctrl-C still cleans up.
	// It is generous because the scale check's pods go in one release.
	DefaultCleanupTimeout = 5 * time.Minute
	// DefaultNamespace is the Kubernetes namespace of every pod the suite
	// creates.
	DefaultNamespace = "sandboxipam-conformance"
	// SystemNamespace is the second namespace the suite makes pods in,
	// beside Config.Namespace: kube-system, where CoreDNS runs on the pod
	// network and kube-proxy on the host's. An adapter that leaves out the
	// kube-* namespaces fails the checks that look for those pods.
	SystemNamespace = "kube-system"
	// DefaultConcurrency is how many ListSandboxes calls the concurrency
	// check makes at once.
	DefaultConcurrency = 16
	// DefaultRecoveryTimeout is how long the runtime-restart check waits
	// for the adapter to list again once the runtime is back: generous,
	// because a runtime's restart on a loaded machine takes seconds.
	DefaultRecoveryTimeout = time.Minute
	// DefaultCreateParallelism is how many pods the scale check creates at
	// once.
	DefaultCreateParallelism = 8
)

// ErrInvalidConfig is wrapped by every error Config.Validate returns.
var ErrInvalidConfig = errors.New("invalid conformance config")

// Config says which adapter to test and how. Zero fields take the default
// stated in their comment.
type Config struct {
	// AdapterPath is the adapter binary. Required.
	AdapterPath string
	// AdapterArgs are passed to the adapter binary, e.g.
	// []string{"--endpoint", "unix:///run/containerd/containerd.sock"}.
	// Default: none (the adapter's own defaults).
	AdapterArgs []string
	// AdapterEnv is added to the adapter's environment. Default: none.
	AdapterEnv []string
	// AdapterSHA256, when set, pins the binary's checksum as ipamd can.
	// Default: not pinned.
	AdapterSHA256 string
	// DisableAutoMTLS turns off go-plugin's AutoMTLS. Default: false
	// (mTLS on, as in ipamd).
	DisableAutoMTLS bool

	// Fixture creates real pods in the runtime the adapter reads. The
	// caller owns it (and calls its Cleanup). Default: nil, and every check
	// that needs pods is skipped with "pods not supported".
	Fixture fixture.Fixture

	// Namespace is the Kubernetes namespace of most pods the suite
	// creates; a namespace of its own tells a run's pods apart from any
	// other's. A few more go to SystemNamespace, told apart by their
	// names, which carry the run's ID. Default: DefaultNamespace.
	Namespace string

	// UnreachableArgs are the adapter's arguments pointing it at a socket
	// nobody serves, for the unreachable-is-error check. Default: built
	// by EndpointArgs when that is set; otherwise the check is skipped.
	UnreachableArgs []string
	// EndpointArgs builds the adapter's arguments for another endpoint
	// URI (unix://PATH). The suite uses it for a socket nobody serves and
	// for a socket that accepts connections and never answers (a hung
	// runtime). Default: nil, and the hung-runtime check is skipped.
	EndpointArgs func(endpoint string) []string
	// WrongRuntimeArgs are arguments that point the adapter at a runtime
	// it was not built for, for the wrong-runtime-refused check. Default:
	// none, and that check is skipped.
	WrongRuntimeArgs []string
	// NoCRIEndpoint is the URI of a containerd whose CRI plugin is
	// disabled, as Docker starts its own, for the
	// containerd-without-cri-refused check; EndpointArgs points the adapter
	// at it. Default: none, and that check is skipped.
	NoCRIEndpoint string

	// Scale is how many pods the scale check creates, and the benchmark.
	// Default: DefaultScale. Negative skips the scale check.
	Scale int
	// Benchmark runs no checks: it creates Scale pods and measures
	// ListSandboxes and GetSandbox latencies and the adapter's memory
	// (Report.Benchmark), without pass or fail. Default: false.
	Benchmark bool
	// Focus, when set, runs only the checks whose ID matches it.
	Focus *regexp.Regexp
	// Skip, when set, skips the checks whose ID matches it.
	Skip *regexp.Regexp
	// Timeout bounds each adapter call. Default: DefaultTimeout.
	Timeout time.Duration
	// DeadlineSlack is the margin the deadline checks allow. Default:
	// DefaultDeadlineSlack.
	DeadlineSlack time.Duration
	// CleanupTimeout bounds the release of one check's resources.
	// Default: DefaultCleanupTimeout.
	CleanupTimeout time.Duration
	// RecoveryTimeout is how long the runtime-restart check waits for the
	// adapter to list again once the runtime is back. Default:
	// DefaultRecoveryTimeout.
	RecoveryTimeout time.Duration
	// StartTimeout bounds the adapter's plugin handshake. Default: the
	// plugin package's own.
	StartTimeout time.Duration
	// Logger receives the suite's and the adapter's logs. Default: discard.
	Logger *slog.Logger
}

// Validate reports the first field that is wrong, naming it.
func (c Config) Validate() error {
	switch {
	case c.AdapterPath == "":
		return fmt.Errorf("%w: AdapterPath is required", ErrInvalidConfig)
	case c.Timeout < 0:
		return fmt.Errorf("%w: Timeout must not be negative, got %s", ErrInvalidConfig, c.Timeout)
	case c.DeadlineSlack < 0:
		return fmt.Errorf("%w: DeadlineSlack must not be negative, got %s", ErrInvalidConfig, c.DeadlineSlack)
	case c.CleanupTimeout < 0:
		return fmt.Errorf("%w: CleanupTimeout must not be negative, got %s", ErrInvalidConfig, c.CleanupTimeout)
	case c.RecoveryTimeout < 0:
		return fmt.Errorf("%w: RecoveryTimeout must not be negative, got %s", ErrInvalidConfig, c.RecoveryTimeout)
	}
	return nil
}

// withDefaults returns a copy with every zero field set to its default.
func (c Config) withDefaults() Config {
	if c.Scale == 0 {
		c.Scale = DefaultScale
	}
	if c.Timeout == 0 {
		c.Timeout = DefaultTimeout
	}
	if c.DeadlineSlack == 0 {
		c.DeadlineSlack = DefaultDeadlineSlack
	}
	if c.CleanupTimeout == 0 {
		c.CleanupTimeout = DefaultCleanupTimeout
	}
	if c.RecoveryTimeout == 0 {
		c.RecoveryTimeout = DefaultRecoveryTimeout
	}
	if c.Namespace == "" {
		c.Namespace = DefaultNamespace
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// selected reports whether the check with this ID runs under Focus and Skip.
func (c Config) selected(id string) bool {
	if c.Focus != nil && !c.Focus.MatchString(id) {
		return false
	}
	return c.Skip == nil || !c.Skip.MatchString(id)
}
