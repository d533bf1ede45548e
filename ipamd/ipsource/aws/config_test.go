package aws

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestDefaultConfigIsValid(t *testing.T) {
	cfg := DefaultConfig()
	if err := cfg.Validate(); err != nil {
		t.Fatalf("DefaultConfig().Validate() = %v", err)
	}
	if want := (Config{WarmENITarget: 1}); cfg != want {
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
		edit func(*settings)
		want string
	}{
		{func(c *settings) { c.WarmIPTarget = -1 }, "aws.warmIPTarget must be >= 0, got -1"},
		{func(c *settings) { c.MinimumIPTarget = -2 }, "aws.minimumIPTarget must be >= 0, got -2"},
		{func(c *settings) { c.WarmENITarget = -1 }, "aws.warmENITarget must be >= 0, got -1"},
		{func(c *settings) { c.MaxENIs = -1 }, "aws.maxENIs must be >= 0, got -1"},
		{func(c *settings) { c.WarmENITarget = 0 }, "aws.warmIPTarget, aws.minimumIPTarget or aws.warmENITarget must be > 0, got all 0"},
		{func(c *settings) { c.PoolCheckInterval = 0 }, "aws.poolCheckInterval must be > 0, got 0s"},
		{func(c *settings) { c.ResyncInterval = -time.Second }, "aws.resyncInterval must be > 0, got -1s"},
		{func(c *settings) { c.LeakedENICleanupInterval = 0 }, "aws.leakedENICleanupInterval must be > 0, got 0s"},
		{func(c *settings) { c.ShrinkInterval = -time.Second }, "aws.shrinkInterval must be >= 0, got -1s"},
		{func(c *settings) { c.MaxAttempts = 0 }, "aws.maxAttempts must be >= 1, got 0"},
		{func(c *settings) { c.MaxBackoff = 0 }, "aws.maxBackoff must be > 0, got 0s"},
		{func(c *settings) { c.EC2Endpoint = "ec2.local" }, `aws.ec2Endpoint must be an http or https URL, got "ec2.local"`},
		{func(c *settings) { c.IMDSEndpoint = "ftp://x" }, `aws.imdsEndpoint must be an http or https URL, got "ftp://x"`},
	} {
		cfg := settings{DefaultConfig(), DefaultTuning()}
		tc.edit(&cfg)
		err := errors.Join(cfg.Config.Validate(), cfg.Tuning.Validate())
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Validate() = %v, want %q", err, tc.want)
		}
	}
}

func TestNewRejectsInvalidConfig(t *testing.T) {
	cfg := DefaultConfig()
	cfg.WarmIPTarget = -1
	if _, err := New(cfg, DefaultTuning(), Options{}); err == nil || !strings.Contains(err.Error(), "aws.warmIPTarget must be >= 0, got -1") {
		t.Fatalf("New = %v", err)
	}
}

func TestTargetsArithmetic(t *testing.T) {
	const perENI = 5
	for _, tc := range []struct {
		name            string
		warmIP, minIP   int
		warmENI         int
		total, free     int
		short, surplus  int
		releaseFree5ENI bool
	}{
		{"warm IP short", 3, 0, 1, 5, 1, 2, 0, false},
		{"warm IP over", 3, 0, 1, 10, 9, 0, 6, true},
		{"minimum short", 0, 8, 1, 5, 5, 3, 0, false},
		{"minimum holds free", 0, 8, 1, 8, 8, 0, 0, false},
		{"warm and minimum", 2, 8, 1, 8, 1, 1, 0, false},
		{"minimum caps surplus", 2, 8, 1, 10, 9, 0, 2, false},
		{"warm ENI short", 0, 0, 1, 5, 4, 1, 0, false},
		{"warm ENI two", 0, 0, 2, 10, 9, 1, 0, false},
		{"warm ENI spare", 0, 0, 1, 15, 12, 0, 0, true},
		{"warm ENI exact", 0, 0, 1, 10, 5, 0, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := Config{WarmIPTarget: tc.warmIP, MinimumIPTarget: tc.minIP, WarmENITarget: tc.warmENI}
			p := poolCounts{total: tc.total, free: tc.free}
			if got := cfg.shortfall(p, perENI); got != tc.short {
				t.Errorf("shortfall = %d, want %d", got, tc.short)
			}
			if got := cfg.surplus(p); got != tc.surplus {
				t.Errorf("surplus = %d, want %d", got, tc.surplus)
			}
			if got := cfg.canReleaseENI(p, perENI, perENI); got != tc.releaseFree5ENI {
				t.Errorf("canReleaseENI(5 free) = %v, want %v", got, tc.releaseFree5ENI)
			}
		})
	}
}
