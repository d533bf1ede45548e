package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A zero the operator writes is either the value used or refused with the
// reason; it never silently becomes the default.
func TestWrittenZeroIsUsedOrRefusedWithTheReason(t *testing.T) {
	// load writes yaml after an ipSource block: static, or the source
	// yaml starts with (its lines indented under ipSource).
	load := func(t *testing.T, yaml string) (Config, error) {
		t.Helper()
		if !strings.HasPrefix(yaml, "  type:") {
			yaml = "  type: static\n  static:\n    cidrs: [198.18.0.0/24]\n" + yaml
		}
		path := filepath.Join(t.TempDir(), "config.yaml")
		if err := os.WriteFile(path, []byte("ipSource:\n"+yaml), 0o600); err != nil {
			t.Fatal(err)
		}
		return Load(path, nil)
	}
	t.Run("used", func(t *testing.T) {
		cfg, err := load(t, "cooldown: 0s\nadvanced:\n  aws:\n    shrinkInterval: 0s\n")
		if err != nil {
			t.Fatal(err)
		}
		if cfg.Cooldown != 0 || cfg.Advanced.AWS.ShrinkInterval != 0 {
			t.Errorf("cooldown %s, advanced.aws.shrinkInterval %s; want the 0s written", cfg.Cooldown, cfg.Advanced.AWS.ShrinkInterval)
		}
		cfg, err = load(t, "  type: pool\n  nodeName: n1\n  pool:\n    returnGrace: 0s\n")
		if err != nil {
			t.Fatal(err)
		}
		if cfg.IPSource.Pool.ReturnGrace != 0 {
			t.Errorf("ipSource.pool.returnGrace %s, want the 0s written", cfg.IPSource.Pool.ReturnGrace)
		}
	})
	for _, tc := range []struct{ yaml, want string }{
		{"reconcile:\n  interval: 0s\n", "reconcile.interval must be positive, got 0s: passes would run back to back"},
		{"reconcile:\n  grace: 0s\n",
			"reconcile.grace must be positive, got 0s: a pod whose ADD raced the runtime listing would lose its address while it runs"},
		{"advanced:\n  reconcile:\n    listTimeout: 0s\n",
			"advanced.reconcile.listTimeout must be positive, got 0s: every runtime listing would time out, so nothing would be reconciled"},
		{"advanced:\n  reconcile:\n    linkGrace: 0s\n",
			"advanced.reconcile.linkGrace must be positive, got 0s: a pod still being wired at a restart would count as holding nothing, and its address could go to another pod"},
		{"advanced:\n  adapter:\n    startTimeout: 0s\n", "advanced.adapter.startTimeout must be positive, got 0s: every adapter launch would time out at once"},
		{"advanced:\n  adapter:\n    minBackoff: 0s\n",
			"advanced.adapter.minBackoff must be positive, got 0s: a crashing adapter would be relaunched in a tight loop"},
		{"advanced:\n  adapter:\n    healthInterval: 0s\n",
			"advanced.adapter.healthInterval must be positive, got 0s: it is also the ping's deadline, so every check would fail"},
		{"  type: pool\n  nodeName: n1\n  pool:\n    lowWatermark: 0\n",
			"ipSource.pool.lowWatermark must be at least 1, got 0: free addresses never fall below 0, so no block would ever be claimed"},
		{"  type: pool\n  nodeName: n1\n  pool:\n    interval: 0s\n",
			"ipSource.pool.interval must be positive, got 0s: the watermarks would be checked in a busy loop"},
		{"  type: aws\n  aws:\n    enablePrefixDelegation: true\n    warmPrefixTarget: 0\n",
			"ipSource.aws.warmPrefixTarget must be > 0 with aws.enablePrefixDelegation and no IP target, got 0: the pool would keep no free prefix and never grow"},
		{"  type: aws\nadvanced:\n  aws:\n    maxAttempts: 0\n",
			"advanced.aws.maxAttempts must be >= 1, got 0: the SDK would read 0 as its own default, 3"},
		{"  type: aws\nadvanced:\n  aws:\n    resyncInterval: 0s\n", "advanced.aws.resyncInterval must be > 0, got 0s: EC2 would be read in a busy loop"},
	} {
		_, err := load(t, tc.yaml)
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Load(%q) = %v\nwant ErrInvalid containing %q", tc.yaml, err, tc.want)
		}
	}
}
