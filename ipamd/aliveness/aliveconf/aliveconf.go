// Package aliveconf is ipamd's "alive" listener's part of the
// configuration (alive): where ipamd answers the reclaimer's question
// "does this node still run?" on the data plane (package aliveness). It is
// a leaf (standard library and the ipamdlease leaf only), composed by
// package config like the other parts.
package aliveconf

import (
	"errors"
	"fmt"
	"net/netip"

	"github.com/sandboxipam/sandboxipam/cluster/api/ipamdlease"
)

// Config is alive: the node's own addresses ipamd answers on, which its
// Lease records for the reclaimer (only with ipSource.type pool).
type Config struct {
	// Hosts are this node's IP addresses (its InternalIPs) to answer on;
	// the DaemonSet sets IPAMD_ALIVE_HOSTS from the downward API's
	// status.hostIPs (ipamd runs in the host's network namespace). Not
	// loopback: the reclaimer asks from another node. Default none: ipamd
	// does not answer, and the reclaimer reclaims its node's blocks only on
	// an operator's confirmation.
	Hosts []string `yaml:"hosts" desc:"this node's IPs to answer the reclaimer's alive probe on (the DaemonSet sets status.hostIPs; empty: off) (env: comma-separated)"`
	// Port is the TCP port on each host. Default 61682.
	Port int `yaml:"port" desc:"TCP port of the alive answer on each of alive.hosts"`
}

// DefaultConfig returns the defaults stated on Config's fields.
func DefaultConfig() Config { return Config{Port: ipamdlease.DefaultAlivePort} }

// Validate checks c; the errors name the field under alive.
func (c Config) Validate() error {
	var errs []error
	if c.Port < 1 || c.Port > 65535 {
		errs = append(errs, fmt.Errorf("port must be 1-65535, got %d", c.Port))
	}
	for i, h := range c.Hosts {
		a, err := netip.ParseAddr(h)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("hosts[%d] must be an IP address of this node, got %q", i, h))
		case a.IsLoopback() || a.IsUnspecified():
			errs = append(errs, fmt.Errorf("hosts[%d] must be an address other nodes reach (not loopback or unspecified), got %q", i, h))
		}
	}
	return errors.Join(errs...)
}

// Addresses are the host:port addresses to listen on and record in the
// Lease; nil when Hosts is empty. Call it on a valid Config.
func (c Config) Addresses() []netip.AddrPort {
	var out []netip.AddrPort
	for _, h := range c.Hosts {
		if a, err := netip.ParseAddr(h); err == nil {
			out = append(out, netip.AddrPortFrom(a.Unmap(), uint16(c.Port)))
		}
	}
	return out
}
