package pool

import (
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/sandboxipam/sandboxipam/cluster/api/v1alpha1"
)

// probe visits every block of every CIDR exactly once, whatever the seed,
// and two seeds start in different places.
func TestProbeVisitsEveryBlockOnce(t *testing.T) {
	spec := v1alpha1.IPPoolSpec{IPv4: &v1alpha1.PoolFamily{CIDRs: []string{"198.18.0.0/24", "198.18.4.0/26"}, BlockSize: 28}}
	fams, err := families(spec)
	if err != nil || len(fams) != 1 {
		t.Fatalf("families = %v, %v", fams, err)
	}
	firsts := map[netip.Prefix]bool{}
	for _, seed := range []string{"node-1", "node-2", "node-3", "a-much-longer-node-name"} {
		seen := map[netip.Prefix]bool{}
		first := true
		for p := range fams[0].probe(seed) {
			if first {
				firsts[p], first = true, false
			}
			if seen[p] || p.Bits() != 28 || p != p.Masked() || !fams[0].contains(p) {
				t.Fatalf("seed %s: block %s repeated or not a /28 of the pool", seed, p)
			}
			seen[p] = true
		}
		if len(seen) != 16+4 {
			t.Fatalf("seed %s: %d blocks visited, want 20", seed, len(seen))
		}
	}
	if len(firsts) < 2 {
		t.Errorf("every seed probes from the same block %v", firsts)
	}
}

func TestFamiliesRejectsACIDRSmallerThanABlock(t *testing.T) {
	_, err := families(v1alpha1.IPPoolSpec{IPv6: &v1alpha1.PoolFamily{CIDRs: []string{"fd00::/126"}, BlockSize: 122}})
	if err == nil || !strings.Contains(err.Error(), "fd00::/126: smaller than a block (/122)") {
		t.Fatalf("families = %v, want an error naming the CIDR", err)
	}
}

func TestConfigValidateNamesTheField(t *testing.T) {
	for _, tc := range []struct {
		mutate func(*Config)
		want   string
	}{
		{func(c *Config) { c.Pool = "" }, `ipSource.pool.pool must name an IPPool (a lowercase DNS subdomain such as "default"), got ""`},
		{func(c *Config) { c.LowWatermark = 0 }, "ipSource.pool.lowWatermark must be at least 1, got 0"},
		{func(c *Config) { c.HighWatermark = 10 }, "ipSource.pool.highWatermark must be above lowWatermark (16), got 10"},
		{func(c *Config) { c.ReturnGrace = -time.Second }, "ipSource.pool.returnGrace must not be negative, got -1s"},
		{func(c *Config) { c.Interval = 0 }, "ipSource.pool.interval must be positive, got 0s"},
		{func(c *Config) { c.Lease.Namespace = "" }, `ipSource.pool.lease.namespace must name a namespace (POD_NAMESPACE), got ""`},
		{func(c *Config) { c.Lease.FenceAfter = 20 * time.Second },
			"ipSource.pool.lease.fenceAfter must be at least 3 × lease.renewInterval (30s), so one slow renew does not fence, got 20s"},
		{func(c *Config) { c.Lease.FenceAfter = 290 * time.Second },
			"ipSource.pool.lease.fenceAfter + lease.renewInterval must be at most 4m54s (98% of the reclaimer's grace 5m0s), got 5m0s"},
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
