package dockershim

import (
	"flag"

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

// preset is the whole of what this adapter adds to package cri.
var preset = cri.Preset{
	AdapterName: AdapterName,
	RuntimeName: DefaultRuntimeName,
	Endpoints:   defaultEndpoints(),
}

// Config configures the dockershim adapter (see cri.PresetConfig for the
// fields). Endpoint's default is empty, which means
// unix:///var/run/dockershim.sock, or unix:///var/run/cri-dockerd.sock when
// the first is absent (checked at every connection attempt, so a node that
// moves from one to the other needs no reconfiguration).
type Config cri.PresetConfig

// DefaultConfig returns the configuration that finds dockershim or
// cri-dockerd at their default sockets.
func DefaultConfig() Config {
	return Config(preset.DefaultConfig())
}

// Validate checks every field; messages name the field as
// dockershim.<field>.
func (c Config) Validate() error {
	return preset.Validate(cri.PresetConfig(c))
}

// defaultEndpoints are the sockets tried, in order, when no endpoint is
// configured.
func defaultEndpoints() []string {
	return []string{DockershimEndpoint, CRIDockerdEndpoint}
}

// RegisterFlags binds the config to command-line flags, with its current
// values as defaults.
func (c *Config) RegisterFlags(flags *flag.FlagSet) {
	preset.RegisterFlags((*cri.PresetConfig)(c), flags)
}
