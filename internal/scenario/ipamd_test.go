package scenario

import (
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/sandboxipam/sandboxipam/ipamd/config"
)

// The config NewIPAMD writes is one ipamd loads, with every value the
// scenario chose, and the introspection port stays reserved until Close.
func TestNewIPAMDWritesALoadableConfig(t *testing.T) {
	dir, bin := t.TempDir(), t.TempDir()
	d, err := NewIPAMD(IPAMDConfig{Dir: dir, BinDir: bin, Adapter: "docker", Endpoint: "unix:///run/d.sock",
		CIDR: "198.18.1.0/28", Grace: 3 * time.Second, Cooldown: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close() })
	cfg, err := config.Load(d.ConfigPath, nil)
	if err != nil {
		t.Fatalf("ipamd would refuse the scenario's config: %v", err)
	}
	checks := []struct {
		field     string
		got, want any
	}{
		{"socket", cfg.Socket, filepath.Join(dir, "run", "ipamd.sock")},
		{"stateDir", cfg.StateDir, filepath.Join(dir, "state")},
		{"cooldown", cfg.Cooldown, time.Second},
		{"reconcile.interval", cfg.Reconcile.Interval, time.Second},
		{"reconcile.grace", cfg.Reconcile.Grace, 3 * time.Second},
		{"runtime.adapter", cfg.Runtime.Adapter, "docker"},
		{"runtime.endpoint", cfg.Runtime.Endpoint, "unix:///run/d.sock"},
		{"runtime.pluginDir", cfg.Runtime.PluginDir, filepath.Join(bin, "adapters")},
		{"ipSource.type", cfg.IPSource.Type, config.SourceStatic},
		{"ipSource.static.cidrs", len(cfg.IPSource.Static.CIDRs), 1},
		{"ipSource.static.cidrs[0]", cfg.IPSource.Static.CIDRs[0], "198.18.1.0/28"},
		{"introspection.address", cfg.Introspection.Address, d.Addr},
		{"metrics.address", cfg.Metrics.Address, ""},
		{"log.level", cfg.Log.Level, "debug"},
		{"advanced.adapter.healthInterval", cfg.Advanced.Adapter.HealthInterval, 10 * time.Second},
		{"advanced.reconcile.listTimeout", cfg.Advanced.Reconcile.ListTimeout, 5 * time.Second},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.field, c.got, c.want)
		}
	}
	if l, err := net.Listen("tcp", d.Addr); err == nil {
		l.Close()
		t.Errorf("introspection port %s is free before Start: another process could take it", d.Addr)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", d.Addr)
	if err != nil {
		t.Fatalf("introspection port after Close: %v", err)
	}
	l.Close()
}
