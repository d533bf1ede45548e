package reclaim

import (
	"strings"
	"testing"
	"time"
)

func TestDecide(t *testing.T) {
	t0 := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	grace := 5 * time.Minute
	base := func() Input {
		return Input{Block: "198.18.0.0-26", BlockCIDR: "198.18.0.0/26", BlockNodeName: "n1", BlockNodeUID: "uid-1",
			Lease: LeaseSeen{Present: true, RenewTime: t0, Since: t0}, IpamdLease: "kube-system/sandboxipam-ipamd-n1",
			Ipamd: LeaseSeen{Present: true, RenewTime: t0.Add(6 * time.Minute), Since: t0, Duration: 130 * time.Second},
			Alive: AliveSeen{Addresses: []string{"10.0.0.1:61682"}, SilentSince: t0, Silence: "refused"},
			Now:   t0.Add(6 * time.Minute), Grace: grace}
	}
	cases := []struct {
		name    string
		change  func(*Input)
		reclaim bool
		words   string
	}{
		{"node alive with the claim's UID", func(in *Input) { in.NodeExists, in.NodeUID = true, "uid-1" }, false,
			"Node n1 exists with the block's UID uid-1"},
		{"all four hold", func(*Input) {}, true,
			"Node n1 (UID uid-1) does not exist; Lease kube-node-lease/n1 renewed at 2026-12-03T10:00:00Z, unchanged for 6m0s in the reclaimer's sight, longer than the grace 5m0s; no Pod has a status.podIPs address in 198.18.0.0/26; " +
				"ipamd Lease kube-system/sandboxipam-ipamd-n1 unchanged for 6m0s in the reclaimer's sight, longer than the grace 5m0s"},
		// The node's own renewTime says nothing: only the reclaimer's
		// sight of a change counts (above, renewTime is "now").
		{"ipamd renewing (Node, kubelet Lease and Pods gone)", func(in *Input) { in.Ipamd.Since = t0.Add(5 * time.Minute) }, false,
			"ipamd Lease kube-system/sandboxipam-ipamd-n1 last seen to change 1m0s ago, within the grace 5m0s: ipamd may live"},
		{"ipamd Lease exactly at the grace", func(in *Input) { in.Ipamd.Since = t0.Add(time.Minute) }, false,
			"last seen to change 5m0s ago, within the grace 5m0s"},
		{"ipamd Lease's own duration longer than the grace", func(in *Input) { in.Ipamd.Duration = 7 * time.Minute }, false,
			"last seen to change 6m0s ago, within 7m10s: its leaseDuration 7m0s with clock-rate error 1% (longer than the grace 5m0s): ipamd may live"},
		{"ipamd Lease absent, but not watched long enough (a reclaimer restart)", func(in *Input) { in.Ipamd = LeaseSeen{Since: t0.Add(2 * time.Minute)} }, false,
			"ipamd Lease kube-system/sandboxipam-ipamd-n1 absent, but only for 4m0s in the reclaimer's sight, not longer than the grace 5m0s"},
		{"ipamd Lease absent long enough", func(in *Input) { in.Ipamd = LeaseSeen{Since: t0} }, true,
			"ipamd Lease kube-system/sandboxipam-ipamd-n1 absent for 6m0s in the reclaimer's sight, longer than the grace 5m0s"},
		{"registered again under another UID", func(in *Input) { in.NodeExists, in.NodeUID = true, "uid-2" }, true,
			"Node n1 has UID uid-2, not the claim's uid-1 (registered again); "},
		{"pods still hold addresses", func(in *Input) { in.Pods = []string{"prod/web 198.18.0.5"} }, false,
			"pods still hold addresses in 198.18.0.0/26: prod/web 198.18.0.5"},
		{"lease seen changing within the grace", func(in *Input) { in.Lease.Since = t0.Add(2 * time.Minute) }, false,
			"Lease kube-node-lease/n1 renewed at 2026-12-03T10:00:00Z and last seen to change 4m0s ago: within the grace 5m0s"},
		{"lease renewal time within the grace (skewed kubelet clock)", func(in *Input) { in.Lease.RenewTime = t0.Add(3 * time.Minute) }, false,
			"within the grace 5m0s"},
		{"lease exactly at the grace", func(in *Input) { in.Lease.Since, in.Lease.RenewTime = t0.Add(time.Minute), t0.Add(time.Minute) }, false,
			"last seen to change 5m0s ago: within the grace"},
		{"lease absent long enough", func(in *Input) { in.Lease = LeaseSeen{Since: t0} }, true,
			"Lease kube-node-lease/n1 absent for 6m0s in the reclaimer's sight, longer than the grace 5m0s"},
		{"lease absent, but not watched long enough", func(in *Input) { in.Lease = LeaseSeen{Since: t0.Add(4 * time.Minute)} }, false,
			"Lease kube-node-lease/n1 absent, but only for 2m0s in the reclaimer's sight"},
		{"lease never renewed", func(in *Input) { in.Lease.RenewTime = time.Time{} }, true, "never renewed, unchanged for 6m0s"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in := base()
			c.change(&in)
			v := Decide(in)
			words := v.Keep
			if v.Reclaim {
				words = strings.Join(v.Evidence, "; ")
				if len(v.Evidence) != 5 {
					t.Errorf("evidence %q, want one item per condition", v.Evidence)
				}
			}
			if v.Reclaim != c.reclaim || !strings.Contains(words, c.words) {
				t.Fatalf("reclaim %v %q, want %v and %q", v.Reclaim, words, c.reclaim, c.words)
			}
		})
	}
}

func TestConfigValidateNamesTheField(t *testing.T) {
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatalf("defaults: %v", err)
	}
	for field, change := range map[string]func(*Config){
		"grace must be at least 1m0s":         func(c *Config) { c.Grace = 30 * time.Second },
		"interval must be positive":           func(c *Config) { c.Interval = 0 },
		"checkInterval must be positive":      func(c *Config) { c.CheckInterval = -time.Second },
		"leaderElection.name must be set":     func(c *Config) { c.LeaderElection.Name = "" },
		"leaderElection.leaseDuration (10s)":  func(c *Config) { c.LeaderElection.LeaseDuration = 10 * time.Second },
		"leaderElection.renewDeadline (2s)":   func(c *Config) { c.LeaderElection.RenewDeadline = 2 * time.Second },
		"leaderElection.retryPeriod must be ": func(c *Config) { c.LeaderElection.RetryPeriod = 0 },
		"ipamdLeaseNamespace must be set":     func(c *Config) { c.IpamdLeaseNamespace = "" },
	} {
		c := DefaultConfig()
		change(&c)
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), field) {
			t.Errorf("error %v, want one naming %q", err, field)
		}
	}
}

// Condition (d) with a short grace (issue 44, paths 5 and 6): a deleted
// Lease keeps the longest duration seen of it, an ipamd never seen counts
// as the longest ipamd accepts, and the wait carries the clocks' rate
// error on top of the duration, whatever the grace.
func TestIpamdStoppedWaitsOutTheDurationWithClockError(t *testing.T) {
	t0 := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	const name = "ipamd Lease kube-system/sandboxipam-ipamd-n1"
	for _, c := range []struct {
		what    string
		seen    LeaseSeen
		quiet   time.Duration
		stopped bool
		words   string
	}{
		{"deleted, within the wait", LeaseSeen{Duration: 130 * time.Second}, 134 * time.Second, false,
			name + " absent, but only for 2m14s in the reclaimer's sight, not longer than 2m14s: its leaseDuration 2m10s with clock-rate error 1% (longer than the grace 1m0s)"},
		{"deleted, waited out", LeaseSeen{Duration: 130 * time.Second}, 135 * time.Second, true,
			name + " absent for 2m15s in the reclaimer's sight, longer than 2m14s: its leaseDuration 2m10s with clock-rate error 1% (longer than the grace 1m0s)"},
		{"never seen", LeaseSeen{}, 5 * time.Minute, false,
			name + " absent, but only for 5m0s in the reclaimer's sight, not longer than 5m0s: no leaseDuration seen, so the longest ipamd accepts, 4m53s, with clock-rate error 1% (longer than the grace 1m0s)"},
		{"never seen, waited out", LeaseSeen{}, 5*time.Minute + time.Second, true,
			name + " absent for 5m1s in the reclaimer's sight, longer than 5m0s: no leaseDuration seen, so the longest ipamd accepts, 4m53s, with clock-rate error 1% (longer than the grace 1m0s)"},
		{"present, past its bare duration", LeaseSeen{Present: true, Duration: 130 * time.Second}, 132 * time.Second, false,
			name + " last seen to change 2m12s ago, within 2m14s: its leaseDuration 2m10s with clock-rate error 1% (longer than the grace 1m0s): ipamd may live"},
		{"present, waited out", LeaseSeen{Present: true, Duration: 130 * time.Second}, 135 * time.Second, true,
			name + " unchanged for 2m15s in the reclaimer's sight, longer than 2m14s: its leaseDuration 2m10s with clock-rate error 1% (longer than the grace 1m0s)"},
	} {
		t.Run(c.what, func(t *testing.T) {
			c.seen.Since = t0
			in := Input{BlockNodeName: "n1", IpamdLease: "kube-system/sandboxipam-ipamd-n1", Ipamd: c.seen, Now: t0.Add(c.quiet), Grace: time.Minute}
			words, stopped := ipamdStopped(in)
			if stopped != c.stopped || words != c.words {
				t.Fatalf("ipamdStopped = %v %q, want %v %q", stopped, words, c.stopped, c.words)
			}
		})
	}
}
