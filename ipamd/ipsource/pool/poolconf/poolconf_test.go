package poolconf

import (
	"testing"
	"time"
)

func TestConfigValidateNamesTheField(t *testing.T) {
	for _, tc := range []struct {
		mutate func(*Config)
		want   string
	}{
		{func(c *Config) { c.Pool = "" }, `ipSource.pool.pool must name an IPPool (a lowercase DNS subdomain such as "default"), got ""`},
		{func(c *Config) { c.LowWatermark = 0 }, "ipSource.pool.lowWatermark must be at least 1, got 0: free addresses never fall below 0, so no block would ever be claimed"},
		{func(c *Config) { c.HighWatermark = 10 }, "ipSource.pool.highWatermark must be above lowWatermark (16), got 10"},
		{func(c *Config) { c.ReturnGrace = -time.Second }, "ipSource.pool.returnGrace must not be negative, got -1s"},
		{func(c *Config) { c.Interval = 0 }, "ipSource.pool.interval must be positive, got 0s: the watermarks would be checked in a busy loop"},
		{func(c *Config) { c.Lease.Namespace = "" }, `ipSource.pool.lease.namespace must name a namespace (POD_NAMESPACE), got ""`},
		{func(c *Config) { c.Lease.FenceAfter = 20 * time.Second },
			"ipSource.pool.lease.fenceAfter must be at least 3 × lease.renewInterval (30s), so one slow renew does not fence, got 20s"},
		{func(c *Config) { c.Lease.FenceAfter = 284 * time.Second },
			"ipSource.pool.lease.fenceAfter + lease.renewInterval must be at most 4m53s (what the reclaimer's grace 5m0s covers with clock-rate error 1%), got 4m54s"},
	} {
		c := DefaultConfig()
		tc.mutate(&c)
		if err := c.Validate("ipSource.pool"); err == nil || err.Error() != tc.want {
			t.Errorf("Validate = %v, want %q", err, tc.want)
		}
	}
	if err := DefaultConfig().Validate("ipSource.pool"); err != nil {
		t.Errorf("DefaultConfig().Validate = %v", err)
	}
}
