// Package poolconf is the pool IP source's part of ipamd's configuration
// (ipSource.pool): the fields, their defaults and their validation. It is
// a leaf (no client library) so that package config can compose it without
// compiling client-go, and parsing or fuzzing the config touches only the
// config; package ipsource/pool runs a source from these values.
package poolconf

import (
	"errors"
	"fmt"
	"time"

	"github.com/sandboxipam/sandboxipam/ipamd/config/validname"
)

// Config is what ipamd reads under ipSource.pool and embeds as it is. The
// node's name comes from ipSource.nodeName.
type Config struct {
	// Pool is the IPPool to claim blocks of. Default "default".
	Pool string `yaml:"pool" desc:"the IPPool this node claims address blocks of"`
	// LowWatermark: a block is claimed when the free addresses of a
	// family fall below it. Default 16.
	LowWatermark int `yaml:"lowWatermark" desc:"claim a block when a family's free addresses fall below this"`
	// HighWatermark: an empty block is returned only while the free
	// addresses of its family are above it, and stay at least
	// lowWatermark without it. Default 96.
	HighWatermark int `yaml:"highWatermark" desc:"return an empty block only while a family's free addresses are above this"`
	// ReturnGrace is how long a block stays empty before it may be
	// returned. Default 5m.
	ReturnGrace time.Duration `yaml:"returnGrace" desc:"how long a block must stay empty before it is returned"`
	// Interval is how often the free addresses are compared with the
	// watermarks. Default 1s.
	Interval time.Duration `yaml:"interval" desc:"how often free addresses are compared with the watermarks"`
	// Kubeconfig is the kubeconfig file to reach the API server with.
	// Default empty: ipSource.podCIDR.kubeconfig, else the in-cluster config
	// of the pod's service account.
	Kubeconfig string `yaml:"kubeconfig" desc:"kubeconfig file for the pool source (empty: ipSource.podCIDR.kubeconfig, else in-cluster service account)"`
}

// DefaultConfig returns the defaults stated on Config's fields.
func DefaultConfig() Config {
	return Config{Pool: "default", LowWatermark: 16, HighWatermark: 96, ReturnGrace: 5 * time.Minute, Interval: time.Second}
}

// Validate checks c; every error names its field under prefix (the
// daemon passes "ipSource.pool").
func (c Config) Validate(prefix string) error {
	var errs []error
	add := func(format string, a ...any) { errs = append(errs, fmt.Errorf(prefix+"."+format, a...)) }
	if validname.DNSSubdomain(c.Pool) != nil {
		add("pool must name an IPPool (a lowercase DNS subdomain such as \"default\"), got %q", c.Pool)
	}
	if c.LowWatermark < 1 {
		add("lowWatermark must be at least 1, got %d", c.LowWatermark)
	}
	if c.HighWatermark <= c.LowWatermark {
		add("highWatermark must be above lowWatermark (%d), got %d", c.LowWatermark, c.HighWatermark)
	}
	if c.ReturnGrace < 0 {
		add("returnGrace must not be negative, got %s", c.ReturnGrace)
	}
	if c.Interval <= 0 {
		add("interval must be positive, got %s", c.Interval)
	}
	return errors.Join(errs...)
}
