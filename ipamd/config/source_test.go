package config

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// An empty file chooses no IP source and is refused, naming the field and
// every choice: every node given it would otherwise hand out the same
// default addresses. A source chosen by its variable loads.
func TestEmptyConfigFileIsRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Load(path, nil)
	if want := "invalid config: " + errNoSource; !errors.Is(err, ErrInvalid) || err.Error() != want {
		t.Fatalf("Load(empty file) = %v\nwant %s", err, want)
	}
	for _, choice := range []string{"static", "podCIDR", "pool", "aws", "ipSource.type", "IPAMD_IPSOURCE_TYPE"} {
		if !strings.Contains(errNoSource, choice) {
			t.Errorf("the refusal does not name %s: %s", choice, errNoSource)
		}
	}
	// static has no default range either.
	if err := os.WriteFile(path, []byte("ipSource:\n  type: static\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = Load(path, nil)
	if want := "invalid config: ipSource.static.cidrs must list at least one CIDR when ipSource.type is static"; err == nil || err.Error() != want {
		t.Fatalf("Load(type static, no cidrs) = %v\nwant %s", err, want)
	}
	// The environment still chooses, over the file or without one.
	cfg, err := Load(path, []string{"IPAMD_IPSOURCE_STATIC_CIDRS=198.18.7.0/24"})
	if err != nil || cfg.IPSource.Type != SourceStatic || !slices.Equal(cfg.IPSource.Static.CIDRs, []string{"198.18.7.0/24"}) {
		t.Fatalf("type static from the file, cidrs from the environment: %+v, %v", cfg.IPSource, err)
	}
	cfg, err = Load("", []string{"IPAMD_IPSOURCE_TYPE=podCIDR", "NODE_NAME=node-1"})
	if err != nil || cfg.IPSource.Type != SourcePodCIDR {
		t.Fatalf("IPAMD_IPSOURCE_TYPE=podCIDR: %+v, %v", cfg.IPSource, err)
	}
}
