package docker

import (
	"flag"
	"fmt"
	"time"

	"github.com/sandboxipam/sandboxipam/adapters/internal/endpoint"
)

// Defaults for the Docker Engine.
const (
	DefaultEndpoint           = "unix:///var/run/docker.sock"
	DefaultTimeout            = 10 * time.Second
	DefaultInspectConcurrency = 8
)

// Config configures the Docker adapter.
type Config struct {
	// Endpoint is the Docker Engine API socket. Default:
	// unix:///var/run/docker.sock.
	Endpoint string
	// Timeout bounds each adapter call (Info, ListSandboxes, GetSandbox)
	// with all the Engine API requests it makes. Default: 10s.
	Timeout time.Duration
	// InspectConcurrency bounds the container inspections in flight while
	// listing. Default: 8.
	InspectConcurrency int
}

// DefaultConfig returns the configuration for the default Docker socket.
func DefaultConfig() Config {
	return Config{
		Endpoint:           DefaultEndpoint,
		Timeout:            DefaultTimeout,
		InspectConcurrency: DefaultInspectConcurrency,
	}
}

// Validate checks every field and names the first bad one.
func (c Config) Validate() error {
	if _, err := endpoint.SocketPath(c.Endpoint); err != nil {
		return fmt.Errorf("docker.endpoint must be a unix socket URI such as %s, got %q: %w", DefaultEndpoint, c.Endpoint, err)
	}
	if c.Timeout <= 0 {
		return fmt.Errorf("docker.timeout must be positive, got %s", c.Timeout)
	}
	if c.InspectConcurrency < 1 {
		return fmt.Errorf("docker.inspect_concurrency must be at least 1, got %d", c.InspectConcurrency)
	}
	return nil
}

// RegisterFlags binds the config to command-line flags, with its current
// values as defaults.
func (c *Config) RegisterFlags(flags *flag.FlagSet) {
	flags.StringVar(&c.Endpoint, "endpoint", c.Endpoint, "Docker Engine API socket URI")
	flags.DurationVar(&c.Timeout, "timeout", c.Timeout, "bound on each adapter call to the runtime")
	flags.IntVar(&c.InspectConcurrency, "inspect-concurrency", c.InspectConcurrency, "container inspections in flight while listing")
}
