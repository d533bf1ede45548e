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

	"github.com/sandboxipam/sandboxipam/cluster/api/ipamdlease"
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
	// returned. Default 5m. 0s is used as written: an empty block may be
	// returned at once (the high watermark still keeps spare addresses).
	ReturnGrace time.Duration `yaml:"returnGrace" desc:"how long a block must stay empty before it is returned"`
	// Interval is how often the free addresses are compared with the
	// watermarks. Default 1s.
	Interval time.Duration `yaml:"interval" desc:"how often free addresses are compared with the watermarks"`
	// Kubeconfig is the kubeconfig file to reach the API server with.
	// Default empty: ipSource.podCIDR.kubeconfig, else the in-cluster config
	// of the pod's service account.
	Kubeconfig string `yaml:"kubeconfig" desc:"kubeconfig file for the pool source (empty: ipSource.podCIDR.kubeconfig, else in-cluster service account)"`
	// Lease is ipamd's own Lease, its evidence of life (package lease).
	Lease LeaseConfig `yaml:"lease"`
}

// LeaseConfig is ipSource.pool.lease: the Lease this ipamd renews and
// when it fences itself (docs/safety.md "Reclaiming a dead node's blocks").
type LeaseConfig struct {
	// Namespace holds the Lease: the namespace ipamd runs in (the
	// DaemonSet sets POD_NAMESPACE from the downward API). Default
	// kube-system.
	Namespace string `yaml:"namespace" envAlias:"POD_NAMESPACE" desc:"namespace of this ipamd's own Lease (the DaemonSet sets POD_NAMESPACE from metadata.namespace)"`
	// RenewInterval is the time between renews. Default 10s.
	RenewInterval time.Duration `yaml:"renewInterval" desc:"how often this ipamd renews its own Lease"`
	// FenceAfter: with no successful renew for this long (ipamd's own
	// monotonic clock, from when the last one was sent), no new address
	// of a claimed block is handed out until a renew succeeds and the
	// blocks are read again. Default 2m; fenceAfter + renewInterval must
	// be at most ipamdlease.MaxLeaseDuration (4m53s), the longest the
	// reclaimer's shipped grace (5m) covers with room for clock-rate error
	// (ipamdlease.ReclaimWait).
	FenceAfter time.Duration `yaml:"fenceAfter" desc:"stop handing out addresses of claimed blocks after this long without renewing the Lease"`
}

// DefaultConfig returns the defaults stated on Config's fields.
func DefaultConfig() Config {
	return Config{Pool: "default", LowWatermark: 16, HighWatermark: 96, ReturnGrace: 5 * time.Minute, Interval: time.Second,
		Lease: LeaseConfig{Namespace: "kube-system", RenewInterval: 10 * time.Second, FenceAfter: 2 * time.Minute}}
}

// maxFence is the longest fenceAfter + renewInterval: bounded so that a
// reclaimer that has never seen this ipamd's Lease duration (the Lease
// deleted) can assume the longest one and still be safe, and so that the
// shipped grace covers it with room for the rates of two clocks (NTP
// keeps them within 0.05%; a VM's unsynchronised clock within about 1%).
const maxFence = ipamdlease.MaxLeaseDuration

// Validate checks c; every error names its field under prefix (the
// daemon passes "ipSource.pool").
func (c Config) Validate(prefix string) error {
	var errs []error
	add := func(format string, a ...any) { errs = append(errs, fmt.Errorf(prefix+"."+format, a...)) }
	if validname.DNSSubdomain(c.Pool) != nil {
		add("pool must name an IPPool (a lowercase DNS subdomain such as \"default\"), got %q", c.Pool)
	}
	if c.LowWatermark < 1 {
		add("lowWatermark must be at least 1, got %d: free addresses never fall below 0, so no block would ever be claimed", c.LowWatermark)
	}
	if c.HighWatermark <= c.LowWatermark {
		add("highWatermark must be above lowWatermark (%d), got %d", c.LowWatermark, c.HighWatermark)
	}
	if c.ReturnGrace < 0 {
		add("returnGrace must not be negative, got %s", c.ReturnGrace)
	}
	if c.Interval <= 0 {
		add("interval must be positive, got %s: the watermarks would be checked in a busy loop", c.Interval)
	}
	l := c.Lease
	if validname.DNSLabel(l.Namespace) != nil {
		add("lease.namespace must name a namespace (POD_NAMESPACE), got %q", l.Namespace)
	}
	if l.RenewInterval <= 0 {
		add("lease.renewInterval must be positive, got %s: renews would run back to back against the API server", l.RenewInterval)
	}
	if l.FenceAfter < 3*l.RenewInterval {
		add("lease.fenceAfter must be at least 3 × lease.renewInterval (%s), so one slow renew does not fence, got %s", 3*l.RenewInterval, l.FenceAfter)
	}
	if l.FenceAfter+l.RenewInterval > maxFence {
		add("lease.fenceAfter + lease.renewInterval must be at most %s (what the reclaimer's grace %s covers with clock-rate error %g%%), got %s",
			maxFence, ipamdlease.DefaultReclaimGrace, ipamdlease.ClockRateError*100, l.FenceAfter+l.RenewInterval)
	}
	return errors.Join(errs...)
}
