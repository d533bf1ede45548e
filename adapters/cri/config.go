package cri

import (
	"errors"
	"fmt"
	"time"

	"github.com/sandboxipam/sandboxipam/adapters/internal/endpoint"
)

// Defaults shared by every CRI-based adapter.
const (
	DefaultTimeout           = 10 * time.Second
	DefaultStatusConcurrency = 8
)

// Config configures a CRI client adapter. The dockershim, crio and
// containerd adapters fill it from their own configs.
type Config struct {
	// AdapterName names the adapter in Info, e.g. "crio". Required.
	AdapterName string
	// Endpoint is the CRI socket, "unix:///path" or "/path". Required.
	Endpoint string
	// FallbackEndpoints are tried in order, at every connection attempt,
	// when the socket of Endpoint (and of the fallbacks before) is absent.
	// Default: none.
	FallbackEndpoints []string
	// RuntimeName is what the runtime must answer in
	// Version().RuntimeName, e.g. "cri-o". Required: an adapter pointed at
	// another runtime refuses to list with runtime.ErrWrongRuntime.
	RuntimeName string
	// Timeout bounds each adapter call (Info, ListSandboxes, GetSandbox)
	// with all the runtime round trips it makes. Default: 10s.
	Timeout time.Duration
	// StatusConcurrency bounds the PodSandboxStatus calls in flight while
	// listing. Default: 8.
	StatusConcurrency int
}

// DefaultConfig returns a Config with the shared defaults; the caller sets
// AdapterName, Endpoint and RuntimeName.
func DefaultConfig() Config {
	return Config{Timeout: DefaultTimeout, StatusConcurrency: DefaultStatusConcurrency}
}

// Validate checks every field and names the first bad one, prefixed by
// the adapter name ("crio.endpoint ...") so that the message points at the
// operator's own setting.
func (c Config) Validate() error {
	if c.AdapterName == "" {
		return errors.New("adapter_name must name the adapter, such as crio, got \"\"")
	}
	field := func(name string) string { return c.AdapterName + "." + name }
	if _, err := endpoint.SocketPath(c.Endpoint); err != nil {
		return fmt.Errorf("%s must be a unix socket URI such as unix:///run/containerd/containerd.sock, got %q: %w", field("endpoint"), c.Endpoint, err)
	}
	for i, fallback := range c.FallbackEndpoints {
		if _, err := endpoint.SocketPath(fallback); err != nil {
			return fmt.Errorf("%s[%d] must be a unix socket URI, got %q: %w", field("fallback_endpoints"), i, fallback, err)
		}
	}
	if c.RuntimeName == "" {
		return fmt.Errorf("%s must name the runtime the endpoint serves, such as containerd, cri-o or docker, got \"\"", field("runtime_name"))
	}
	if c.Timeout <= 0 {
		return fmt.Errorf("%s must be positive, got %s", field("timeout"), c.Timeout)
	}
	if c.StatusConcurrency < 1 {
		return fmt.Errorf("%s must be at least 1, got %d", field("status_concurrency"), c.StatusConcurrency)
	}
	return nil
}
