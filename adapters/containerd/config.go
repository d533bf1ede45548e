package containerd

import (
	"flag"
	"fmt"
	"time"

	"github.com/sandboxipam/sandboxipam/adapters/cri"
	"github.com/sandboxipam/sandboxipam/adapters/internal/endpoint"
)

// Defaults for containerd.
const (
	DefaultEndpoint    = "unix:///run/containerd/containerd.sock"
	DefaultNamespace   = "k8s.io"
	DefaultRuntimeName = "containerd"
	DefaultTimeout     = 10 * time.Second
)

// Config configures the containerd adapter.
type Config struct {
	// Endpoint is containerd's gRPC socket, which also serves CRI.
	// Default: unix:///run/containerd/containerd.sock.
	Endpoint string
	// Namespace is the containerd namespace the CRI plugin keeps pods in.
	// Default: "k8s.io". Used by the native mode only.
	Namespace string
	// CRI selects the CRI mode: list through containerd's CRI plugin
	// (package cri) instead of containerd's own API. Default: false.
	CRI bool
	// RuntimeName is the name the runtime must report: in CRI mode the
	// CRI Version's RuntimeName, natively the server must answer
	// containerd's Version service. Default: "containerd".
	RuntimeName string
	// Timeout bounds each adapter call. Default: 10s.
	Timeout time.Duration
	// StatusConcurrency bounds the per-sandbox calls in flight while
	// listing: task state natively, PodSandboxStatus in CRI mode.
	// Default: 8.
	StatusConcurrency int
}

// DefaultConfig returns the configuration for containerd's default socket
// in native mode.
func DefaultConfig() Config {
	return Config{
		Endpoint:          DefaultEndpoint,
		Namespace:         DefaultNamespace,
		RuntimeName:       DefaultRuntimeName,
		Timeout:           DefaultTimeout,
		StatusConcurrency: cri.DefaultStatusConcurrency,
	}
}

// Validate checks every field and names the first bad one.
func (c Config) Validate() error {
	if c.CRI {
		return c.criConfig().Validate()
	}
	if _, err := endpoint.SocketPath(c.Endpoint); err != nil {
		return fmt.Errorf("containerd.endpoint must be a unix socket URI such as %s, got %q: %w", DefaultEndpoint, c.Endpoint, err)
	}
	if c.Namespace == "" {
		return fmt.Errorf("containerd.namespace must name the CRI plugin's namespace, such as %s, got \"\"", DefaultNamespace)
	}
	if c.RuntimeName != DefaultRuntimeName {
		return fmt.Errorf("containerd.runtime_name must be %q in native mode (only the CRI mode asks the runtime its name), got %q", DefaultRuntimeName, c.RuntimeName)
	}
	if c.Timeout <= 0 {
		return fmt.Errorf("containerd.timeout must be positive, got %s", c.Timeout)
	}
	if c.StatusConcurrency < 1 {
		return fmt.Errorf("containerd.status_concurrency must be at least 1, got %d", c.StatusConcurrency)
	}
	return nil
}

func (c Config) criConfig() cri.Config {
	return cri.Config{
		AdapterName:       AdapterName,
		Endpoint:          c.Endpoint,
		RuntimeName:       c.RuntimeName,
		Timeout:           c.Timeout,
		StatusConcurrency: c.StatusConcurrency,
	}
}

// RegisterFlags binds the config to command-line flags, with its current
// values as defaults.
func (c *Config) RegisterFlags(flags *flag.FlagSet) {
	flags.StringVar(&c.Endpoint, "endpoint", c.Endpoint, "containerd socket URI")
	flags.StringVar(&c.Namespace, "namespace", c.Namespace, "containerd namespace of the CRI plugin (native mode)")
	flags.BoolVar(&c.CRI, "cri", c.CRI, "list through containerd's CRI plugin instead of its own API")
	flags.StringVar(&c.RuntimeName, "runtime-name", c.RuntimeName, "runtime name the endpoint must report in CRI Version (CRI mode)")
	flags.DurationVar(&c.Timeout, "timeout", c.Timeout, "bound on each adapter call to the runtime")
	flags.IntVar(&c.StatusConcurrency, "status-concurrency", c.StatusConcurrency, "per-sandbox status calls in flight while listing")
}
