package crio

import (
	"flag"

	"github.com/sandboxipam/sandboxipam/adapters/cri"
)

// Defaults for CRI-O.
const (
	// DefaultEndpoint is where CRI-O listens unless configured otherwise.
	DefaultEndpoint = "unix:///var/run/crio/crio.sock"
	// DefaultRuntimeName is what CRI-O answers in CRI Version.
	DefaultRuntimeName = "cri-o"
)

// preset is the whole of what this adapter adds to package cri.
var preset = cri.Preset{
	AdapterName:     AdapterName,
	RuntimeName:     DefaultRuntimeName,
	DefaultEndpoint: DefaultEndpoint,
}

// Config configures the CRI-O adapter (see cri.PresetConfig for the
// fields). Endpoint's default is unix:///var/run/crio/crio.sock.
type Config cri.PresetConfig

// DefaultConfig returns the configuration for CRI-O's default socket.
func DefaultConfig() Config {
	return Config(preset.DefaultConfig())
}

// Validate checks every field; messages name the field as crio.<field>.
func (c Config) Validate() error {
	return preset.Validate(cri.PresetConfig(c))
}

// RegisterFlags binds the config to command-line flags, with its current
// values as defaults.
func (c *Config) RegisterFlags(flags *flag.FlagSet) {
	preset.RegisterFlags((*cri.PresetConfig)(c), flags)
}
