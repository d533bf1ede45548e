package cri

import (
	"flag"
	"log/slog"
	"strings"
	"time"
)

// Preset is everything that tells one CRI runtime's adapter from another's:
// the dockershim (and cri-dockerd) and CRI-O adapters are presets of this
// package's client, each with a binary and a config section of its own
// but no code of its own beyond its Preset.
type Preset struct {
	// AdapterName names the adapter in Info and prefixes config messages.
	AdapterName string
	// RuntimeName is what the runtime answers in Version().RuntimeName.
	RuntimeName string
	// DefaultEndpoint is PresetConfig.Endpoint's default; empty means
	// Endpoints decide.
	DefaultEndpoint string
	// Endpoints are the runtime's usual sockets when PresetConfig.Endpoint
	// is empty: the first is used, the others when its socket is absent
	// (checked at every connection attempt).
	Endpoints []string
}

// PresetConfig configures a preset adapter: the runtime-specific part is
// the Preset's, the rest the operator's.
type PresetConfig struct {
	// Endpoint is the CRI socket. Default: the Preset's DefaultEndpoint,
	// or when that is empty its Endpoints in order.
	Endpoint string
	// RuntimeName is the runtime name the endpoint must report. Default:
	// the Preset's. Tests against another CRI runtime set that runtime's.
	RuntimeName string
	// Timeout bounds each adapter call. Default: DefaultTimeout.
	Timeout time.Duration
	// StatusConcurrency bounds the PodSandboxStatus calls in flight while
	// listing. Default: DefaultStatusConcurrency.
	StatusConcurrency int
}

// DefaultConfig returns the preset's defaults.
func (p Preset) DefaultConfig() PresetConfig {
	return PresetConfig{
		Endpoint:          p.DefaultEndpoint,
		RuntimeName:       p.RuntimeName,
		Timeout:           DefaultTimeout,
		StatusConcurrency: DefaultStatusConcurrency,
	}
}

// Config maps a preset adapter's config onto the CRI client's.
func (p Preset) Config(c PresetConfig) Config {
	cfg := Config{
		AdapterName:       p.AdapterName,
		Endpoint:          c.Endpoint,
		RuntimeName:       c.RuntimeName,
		Timeout:           c.Timeout,
		StatusConcurrency: c.StatusConcurrency,
	}
	if cfg.Endpoint == "" && len(p.Endpoints) > 0 {
		cfg.Endpoint, cfg.FallbackEndpoints = p.Endpoints[0], p.Endpoints[1:]
	}
	return cfg
}

// Validate checks every field; messages name the field as
// <adapter name>.<field>.
func (p Preset) Validate(c PresetConfig) error {
	return p.Config(c).Validate()
}

// New validates c and returns the adapter. It connects lazily.
func (p Preset) New(c PresetConfig, log *slog.Logger) (*Adapter, error) {
	return New(p.Config(c), log)
}

// RegisterFlags binds c to command-line flags, with its current values as
// defaults.
func (p Preset) RegisterFlags(c *PresetConfig, flags *flag.FlagSet) {
	endpointHelp := "CRI socket URI"
	switch {
	case p.DefaultEndpoint == "" && len(p.Endpoints) > 1:
		endpointHelp += " (default " + p.Endpoints[0] + ", then " + strings.Join(p.Endpoints[1:], ", ") + " if absent)"
	case p.DefaultEndpoint == "" && len(p.Endpoints) == 1:
		endpointHelp += " (default " + p.Endpoints[0] + ")"
	}
	flags.StringVar(&c.Endpoint, "endpoint", c.Endpoint, endpointHelp)
	flags.DurationVar(&c.Timeout, "timeout", c.Timeout, "bound on each adapter call to the runtime")
	flags.StringVar(&c.RuntimeName, "runtime-name", c.RuntimeName, "runtime name the endpoint must report in CRI Version")
	flags.IntVar(&c.StatusConcurrency, "status-concurrency", c.StatusConcurrency, "PodSandboxStatus calls in flight while listing")
}
