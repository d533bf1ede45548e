package crio

import (
	"flag"
	"time"

	"github.com/sandboxipam/sandboxipam/adapters/cri"
)

// Defaults for CRI-O.
const (
	// DefaultEndpoint is where CRI-O listens unless configured otherwise.
	DefaultEndpoint = "unix:///var/run/crio/crio.sock"
	// DefaultRuntimeName is what CRI-O answers in CRI Version.
	DefaultRuntimeName = "cri-o"
)

// Config configures the CRI-O adapter.
type Config struct {
	// Endpoint is CRI-O's socket. Default: unix:///var/run/crio/crio.sock.
	Endpoint string
	// RuntimeName is the runtime name the endpoint must report. Default:
	// "cri-o". Tests against another CRI runtime set it to that runtime's
	// name.
	RuntimeName string
	// Timeout bounds each adapter call. Default: 10s.
	Timeout time.Duration
	// StatusConcurrency bounds the PodSandboxStatus calls in flight while
	// listing. Default: 8.
	StatusConcurrency int
}

// DefaultConfig returns the configuration for CRI-O's default socket.
func DefaultConfig() Config {
	return Config{
		Endpoint:          DefaultEndpoint,
		RuntimeName:       DefaultRuntimeName,
		Timeout:           cri.DefaultTimeout,
		StatusConcurrency: cri.DefaultStatusConcurrency,
	}
}

// Validate checks every field; messages name the field as crio.<field>.
func (c Config) Validate() error {
	return c.criConfig().Validate()
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
	flags.StringVar(&c.Endpoint, "endpoint", c.Endpoint, "CRI-O socket URI")
	flags.DurationVar(&c.Timeout, "timeout", c.Timeout, "bound on each adapter call to the runtime")
	flags.StringVar(&c.RuntimeName, "runtime-name", c.RuntimeName, "runtime name the endpoint must report in CRI Version")
	flags.IntVar(&c.StatusConcurrency, "status-concurrency", c.StatusConcurrency, "PodSandboxStatus calls in flight while listing")
}
