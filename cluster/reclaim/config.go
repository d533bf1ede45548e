package reclaim

import (
	"errors"
	"fmt"
	"time"

	"github.com/sandboxipam/sandboxipam/cluster/api/ipamdlease"
)

// MinGrace is the shortest Config.Grace accepted: a kubelet renews its
// node Lease every 10 s and a Lease lasts 40 s, so a shorter grace could
// take a brief API server outage for a dead node.
const MinGrace = ipamdlease.MinReclaimGrace

// Config is the reclaimer's configuration; DefaultConfig fills it.
type Config struct {
	// Grace is how long a gone node's Lease must have stayed unrenewed,
	// in the reclaimer's sight, before its blocks may be reclaimed.
	// Default 5m; at least MinGrace.
	Grace time.Duration
	// Interval is the time between reclaim passes. Default 30s.
	Interval time.Duration
	// CheckInterval is the time between two runs of the cluster-wide
	// comparison that feeds the metrics. Default 1m.
	CheckInterval time.Duration
	// LeaderElection is the Lease that makes one reclaimer act at a time.
	LeaderElection LeaderElection
	// IpamdLeaseNamespace is where each node's ipamd renews its own Lease
	// (ipamdlease.IpamdLeaseName): the namespace ipamd's DaemonSet runs in.
	// Default kube-system.
	IpamdLeaseNamespace string
	// AliveTimeout bounds one probe of a gone node's ipamd on one of the
	// addresses its Lease records (condition (e)). Default 3s.
	AliveTimeout time.Duration
	// WatchReclaimed is how long after its last reclaim the reclaimer
	// keeps asking a node's ipamd, to report it if it answers again
	// (returned.go). Default 24h.
	WatchReclaimed time.Duration
}

// LeaderElection says which Lease the reclaimers contend for, and its
// timings (client-go's leaderelection; the defaults are Kubernetes'
// controllers' own).
type LeaderElection struct {
	// Namespace and Name of the Lease. Default kube-system and
	// sandboxipam-reclaimer.
	Namespace, Name string
	// LeaseDuration: how long a non-leader waits before taking over a
	// Lease not renewed. Default 15s.
	LeaseDuration time.Duration
	// RenewDeadline: how long the leader retries renewing before it gives
	// up leading. Default 10s.
	RenewDeadline time.Duration
	// RetryPeriod: the time between attempts to take or renew. Default 2s.
	RetryPeriod time.Duration
}

// DefaultConfig is the configuration with every default.
func DefaultConfig() Config {
	return Config{
		Grace: ipamdlease.DefaultReclaimGrace, Interval: 30 * time.Second, CheckInterval: time.Minute,
		LeaderElection: LeaderElection{Namespace: "kube-system", Name: "sandboxipam-reclaimer",
			LeaseDuration: 15 * time.Second, RenewDeadline: 10 * time.Second, RetryPeriod: 2 * time.Second},
		IpamdLeaseNamespace: "kube-system", AliveTimeout: 3 * time.Second, WatchReclaimed: 24 * time.Hour,
	}
}

// Validate checks every field and names the ones that are wrong.
func (c Config) Validate() error {
	var errs []error
	if c.Grace < MinGrace {
		errs = append(errs, fmt.Errorf("grace must be at least %s (a node Lease lasts 40s), got %s", MinGrace, c.Grace))
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"interval", c.Interval}, {"checkInterval", c.CheckInterval}, {"leaderElection.leaseDuration", c.LeaderElection.LeaseDuration},
		{"leaderElection.renewDeadline", c.LeaderElection.RenewDeadline}, {"leaderElection.retryPeriod", c.LeaderElection.RetryPeriod},
		{"aliveTimeout", c.AliveTimeout}, {"watchReclaimed", c.WatchReclaimed}} {
		if d.v <= 0 {
			errs = append(errs, fmt.Errorf("%s must be positive, got %s", d.name, d.v))
		}
	}
	if c.IpamdLeaseNamespace == "" {
		errs = append(errs, errors.New("ipamdLeaseNamespace must be set (the namespace ipamd's DaemonSet runs in)"))
	}
	le := c.LeaderElection
	if le.Namespace == "" || le.Name == "" {
		errs = append(errs, fmt.Errorf("leaderElection.namespace and leaderElection.name must be set, got %q and %q", le.Namespace, le.Name))
	}
	if le.LeaseDuration <= le.RenewDeadline {
		errs = append(errs, fmt.Errorf("leaderElection.leaseDuration (%s) must be longer than leaderElection.renewDeadline (%s)", le.LeaseDuration, le.RenewDeadline))
	}
	if le.RenewDeadline <= le.RetryPeriod*6/5 {
		errs = append(errs, fmt.Errorf("leaderElection.renewDeadline (%s) must be longer than 1.2 × leaderElection.retryPeriod (%s)", le.RenewDeadline, le.RetryPeriod))
	}
	return errors.Join(errs...)
}
