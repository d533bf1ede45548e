package cni

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/containernetworking/cni/pkg/types"
)

// PluginType is the "type" under which the plugin is configured.
const PluginType = "sandboxipam"

// Defaults of the settings a network config may leave out.
const (
	DefaultIPAMDSocket    = "/run/sandboxipam/ipamd.sock"
	DefaultHostVethPrefix = "sbx"
	DefaultTimeout        = 10 * time.Second
)

// maxHostVethPrefix leaves at least eight hex characters of the hash in a
// 15-character interface name.
const maxHostVethPrefix = 7

// maxMTU is the largest MTU a veth accepts.
const maxMTU = 65535

// Settings are sandboxipam's own keys. In the main plugin they sit at the
// top level of the network config, in IPAM mode inside the "ipam" object.
type Settings struct {
	// IPAMDSocket is ipamd's unix socket; default DefaultIPAMDSocket.
	IPAMDSocket string `json:"ipamdSocket,omitempty"`
	// MTU of both veth ends; 0 keeps the kernel's default (1500).
	MTU int `json:"mtu,omitempty"`
	// HostVethPrefix starts every host-side veth name; default
	// DefaultHostVethPrefix, at most 7 characters.
	HostVethPrefix string `json:"hostVethPrefix,omitempty"`
	// Timeout bounds each call to ipamd, as a Go duration ("5s");
	// default DefaultTimeout.
	Timeout Duration `json:"timeout,omitempty"`
	// Routes are returned as is in IPAM mode (like host-local's routes).
	Routes []*types.Route `json:"routes,omitempty"`
	// PortMap, in the main plugin, runs portmap for a pod's hostPorts
	// (portmap.go); nil: hostPorts are not mapped.
	PortMap *PortMap `json:"portMap,omitempty"`
}

// NetConf is a parsed network config.
type NetConf struct {
	types.PluginConf
	Settings
	// RuntimeConfig is what the runtime filled in for the capabilities
	// the config declares (portMappings).
	RuntimeConfig RuntimeConfig `json:"runtimeConfig"`
	// IPAMMode is true when the plugin was invoked as another plugin's
	// IPAM plugin; Settings then come from the "ipam" object.
	IPAMMode bool `json:"-"`
}

// ipamSection is the "ipam" object with sandboxipam's settings.
type ipamSection struct {
	Type string `json:"type"`
	Settings
}

// Duration is a time.Duration written as a Go duration string in JSON.
type Duration time.Duration

// UnmarshalJSON accepts "250ms", "5s", ...
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("timeout must be a duration string such as \"5s\": %w", err)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("timeout: %w", err)
	}
	*d = Duration(v)
	return nil
}

// MarshalJSON writes the duration as a Go duration string.
func (d Duration) MarshalJSON() ([]byte, error) {
	return json.Marshal(time.Duration(d).String())
}

// ParseConfig decodes and validates a network config (the plugin's stdin)
// and fills in defaults. Its errors are *types.Error with code 6 (decoding)
// or 7 (invalid network config).
func ParseConfig(stdin []byte) (*NetConf, error) {
	conf := &NetConf{}
	if err := json.Unmarshal(stdin, conf); err != nil {
		return nil, types.NewError(types.ErrDecodingFailure, "decode network config", err.Error())
	}
	if err := conf.selectMode(stdin); err != nil {
		return nil, err
	}
	conf.applyDefaults()
	if err := conf.Validate(); err != nil {
		return nil, types.NewError(types.ErrInvalidNetworkConfig, "invalid network config", err.Error())
	}
	return conf, nil
}

// selectMode switches to IPAM mode, with the settings of the "ipam"
// object, when another plugin delegated to sandboxipam.
func (c *NetConf) selectMode(stdin []byte) error {
	if c.Type == PluginType || c.IPAM.Type != PluginType {
		return nil
	}
	var wrapper struct {
		IPAM ipamSection `json:"ipam"`
	}
	if err := json.Unmarshal(stdin, &wrapper); err != nil {
		return types.NewError(types.ErrDecodingFailure, "decode ipam section of network config", err.Error())
	}
	c.IPAMMode = true
	c.Settings = wrapper.IPAM.Settings
	return nil
}

func (c *NetConf) applyDefaults() {
	if c.IPAMDSocket == "" {
		c.IPAMDSocket = DefaultIPAMDSocket
	}
	if c.HostVethPrefix == "" {
		c.HostVethPrefix = DefaultHostVethPrefix
	}
	if c.Timeout == 0 {
		c.Timeout = Duration(DefaultTimeout)
	}
}

// Validate checks the settings; its messages name the field.
func (c *NetConf) Validate() error {
	if c.Name == "" {
		return fmt.Errorf("name must be set")
	}
	if !strings.HasPrefix(c.IPAMDSocket, "/") {
		return fmt.Errorf("ipamdSocket must be an absolute path, got %q", c.IPAMDSocket)
	}
	if c.MTU < 0 || c.MTU > maxMTU || (c.MTU != 0 && c.MTU < 68) {
		return fmt.Errorf("mtu must be 0 (kernel default) or between 68 and %d, got %d", maxMTU, c.MTU)
	}
	if len(c.HostVethPrefix) > maxHostVethPrefix {
		return fmt.Errorf("hostVethPrefix must be at most %d characters, got %q", maxHostVethPrefix, c.HostVethPrefix)
	}
	for _, r := range c.HostVethPrefix {
		if !isNameChar(r) {
			return fmt.Errorf("hostVethPrefix may hold only letters, digits, '-' and '_', got %q", c.HostVethPrefix)
		}
	}
	if c.Timeout < 0 {
		return fmt.Errorf("timeout must be positive, got %s", time.Duration(c.Timeout))
	}
	return c.validatePortMap()
}

func isNameChar(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_'
}
