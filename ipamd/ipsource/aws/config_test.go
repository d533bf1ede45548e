package aws

import (
	"strings"
	"testing"

	"github.com/sandboxipam/sandboxipam/ipamd/ipsource/aws/awsconf"
)

func TestNewRejectsInvalidConfig(t *testing.T) {
	cfg := awsconf.DefaultConfig()
	cfg.WarmIPTarget = -1
	if _, err := New(cfg, awsconf.DefaultTuning(), Options{}); err == nil || !strings.Contains(err.Error(), "aws.warmIPTarget must be >= 0, got -1") {
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
			cfg := targets{awsconf.Config{WarmIPTarget: tc.warmIP, MinimumIPTarget: tc.minIP, WarmENITarget: tc.warmENI}}
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
