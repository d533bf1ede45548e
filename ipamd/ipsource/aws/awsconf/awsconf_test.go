package awsconf

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// both is what ipamd reads of the source: ipSource.aws and advanced.aws.
type both struct {
	Config
	Tuning
}

func TestDefaultConfigIsValid(t *testing.T) {
	cfg := DefaultConfig()
	if err := cfg.Validate(); err != nil {
		t.Fatalf("DefaultConfig().Validate() = %v", err)
	}
	if want := (Config{WarmENITarget: 1, WarmPrefixTarget: 1}); cfg != want {
		t.Fatalf("DefaultConfig() = %+v, want %+v", cfg, want)
	}
	tun := DefaultTuning()
	if err := tun.Validate(); err != nil {
		t.Fatalf("DefaultTuning().Validate() = %v", err)
	}
	want := Tuning{PoolCheckInterval: time.Second, ShrinkInterval: 30 * time.Second, ResyncInterval: time.Minute,
		LeakedENICleanupInterval: 30 * time.Minute, MaxAttempts: 10, MaxBackoff: 20 * time.Second}
	if tun != want {
		t.Fatalf("DefaultTuning() = %+v, want %+v", tun, want)
	}
}

func TestValidateNamesTheField(t *testing.T) {
	for _, tc := range []struct {
		edit func(*both)
		want string
	}{
		{func(c *both) { c.WarmIPTarget = -1 }, "aws.warmIPTarget must be >= 0, got -1"},
		{func(c *both) { c.MinimumIPTarget = -2 }, "aws.minimumIPTarget must be >= 0, got -2"},
		{func(c *both) { c.WarmENITarget = -1 }, "aws.warmENITarget must be >= 0, got -1"},
		{func(c *both) { c.MaxENIs = -1 }, "aws.maxENIs must be >= 0, got -1"},
		{func(c *both) { c.EnablePrefixDelegation, c.WarmPrefixTarget = true, 0 },
			"aws.warmPrefixTarget must be > 0 with aws.enablePrefixDelegation and no IP target, got 0: the pool would keep no free prefix and never grow"},
		{func(c *both) { c.WarmENITarget = 0 }, "aws.warmIPTarget, aws.minimumIPTarget or aws.warmENITarget must be > 0, got all 0"},
		{func(c *both) { c.PoolCheckInterval = 0 }, "aws.poolCheckInterval must be > 0, got 0s"},
		{func(c *both) { c.ResyncInterval = -time.Second }, "aws.resyncInterval must be > 0, got -1s"},
		{func(c *both) { c.LeakedENICleanupInterval = 0 }, "aws.leakedENICleanupInterval must be > 0, got 0s"},
		{func(c *both) { c.ShrinkInterval = -time.Second }, "aws.shrinkInterval must be >= 0, got -1s"},
		{func(c *both) { c.MaxAttempts = 0 }, "aws.maxAttempts must be >= 1, got 0"},
		{func(c *both) { c.MaxBackoff = 0 }, "aws.maxBackoff must be > 0, got 0s"},
		{func(c *both) { c.EC2Endpoint = "ec2.local" }, `aws.ec2Endpoint must be an http or https URL, got "ec2.local"`},
		{func(c *both) { c.IMDSEndpoint = "ftp://x" }, `aws.imdsEndpoint must be an http or https URL, got "ftp://x"`},
	} {
		cfg := both{DefaultConfig(), DefaultTuning()}
		tc.edit(&cfg)
		err := errors.Join(cfg.Config.Validate(), cfg.Tuning.Validate())
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Validate() = %v, want %q", err, tc.want)
		}
	}
}
