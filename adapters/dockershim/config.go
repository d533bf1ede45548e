package dockershim

import (
	"flag"
	"time"

	"github.com/sandboxipam/sandboxipam/adapters/cri"
)

// Defaults for dockershim and cri-dockerd.
const (
	// DockershimEndpoint is where kubelet's built-in dockershim listened
	// (Kubernetes up to 1.23).
	DockershimEndpoint = "unix:///var/run/dockershim.sock"
	// CRIDockerdEndpoint is where cri-dockerd, dockershim's successor,
	// listens.
	CRIDockerdEndpoint = "unix:///var/run/cri-dockerd.sock"
	// DefaultRuntimeName is what both answer in CRI Version.
	DefaultRuntimeName = "docker"
)

// Config configures the dockershim adapter.
type Config struct {
	// Endpoint is the CRI socket. Default: empty, which means
	// unix:///var/run/dockershim.sock, or unix:///var/run/cri-dockerd.sock
	// when the first is absent (checked at every connection attempt, so a
	// node that moves from one to the other needs no reconfiguration).
	Endpoint string
	// RuntimeName is the runtime name the endpoint must report. Default:
	// "docker".
	RuntimeName string
	// Timeout bounds each adapter call. Default: 10s.
	Timeout time.Duration
	// StatusConcurrency bounds the PodSandboxStatus calls in flight while
	// listing. Default: 8.
	StatusConcurrency int
}

// DefaultConfig returns the configuration that finds dockershim or
// cri-dockerd at their default sockets.
func DefaultConfig() Config {
	return Config{
		RuntimeName:       DefaultRuntimeName,
		Timeout:           cri.DefaultTimeout,
		StatusConcurrency: cri.DefaultStatusConcurrency,
	}
}

// Validate checks every field; messages name the field as
// dockershim.<field>.
func (c Config) Validate() error {
	return c.criConfig(defaultEndpoints()).Validate()
}

// defaultEndpoints are the sockets tried, in order, when no endpoint is
// configured.
func defaultEndpoints() []string {
	return []string{DockershimEndpoint, CRIDockerdEndpoint}
}

// criConfig maps the config onto the CRI client's. An empty Endpoint
// selects the first of defaults, falling back to the others.
func (c Config) criConfig(defaults []string) cri.Config {
	cfg := cri.Config{
		AdapterName:       AdapterName,
		Endpoint:          c.Endpoint,
		RuntimeName:       c.RuntimeName,
		Timeout:           c.Timeout,
		StatusConcurrency: c.StatusConcurrency,
	}
	if cfg.Endpoint == "" && len(defaults) > 0 {
		cfg.Endpoint, cfg.FallbackEndpoints = defaults[0], defaults[1:]
	}
	return cfg
}

// RegisterFlags binds the config to command-line flags, with its current
// values as defaults.
func (c *Config) RegisterFlags(flags *flag.FlagSet) {
	flags.StringVar(&c.Endpoint, "endpoint", c.Endpoint,
		"CRI socket URI (default "+DockershimEndpoint+", then "+CRIDockerdEndpoint+" if absent)")
	flags.DurationVar(&c.Timeout, "timeout", c.Timeout, "bound on each adapter call to the runtime")
	flags.StringVar(&c.RuntimeName, "runtime-name", c.RuntimeName, "runtime name the endpoint must report in CRI Version")
	flags.IntVar(&c.StatusConcurrency, "status-concurrency", c.StatusConcurrency, "PodSandboxStatus calls in flight while listing")
}
