package conformance

import (
	"errors"
	"regexp"
	"testing"
	"time"
)

func TestConfigValidateNamesTheField(t *testing.T) {
	cases := []struct {
		cfg  Config
		want string
	}{
		{Config{}, "invalid conformance config: AdapterPath is required"},
		{Config{AdapterPath: "a", Timeout: -time.Second}, "invalid conformance config: Timeout must not be negative, got -1s"},
		{Config{AdapterPath: "a", DeadlineSlack: -time.Second}, "invalid conformance config: DeadlineSlack must not be negative, got -1s"},
		{Config{AdapterPath: "a", CleanupTimeout: -time.Second}, "invalid conformance config: CleanupTimeout must not be negative, got -1s"},
	}
	for _, tc := range cases {
		err := tc.cfg.Validate()
		if err == nil || err.Error() != tc.want || !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("Validate() = %v, want %q wrapping ErrInvalidConfig", err, tc.want)
		}
	}
	if err := (Config{AdapterPath: "a"}).Validate(); err != nil {
		t.Errorf("Validate() of a minimal config = %v", err)
	}
}

func TestConfigDefaults(t *testing.T) {
	cfg := Config{AdapterPath: "a"}.withDefaults()
	if cfg.Scale != 200 || cfg.Timeout != 30*time.Second || cfg.DeadlineSlack != 2*time.Second ||
		cfg.CleanupTimeout != 5*time.Minute || cfg.Namespace != "sandboxipam-conformance" || cfg.Logger == nil {
		t.Errorf("defaults = %+v", cfg)
	}
	if got := (Config{Scale: -1}).withDefaults().Scale; got != -1 {
		t.Errorf("Scale -1 became %d; negative must stay to skip the check", got)
	}
}

func TestFocusAndSkipSelectChecks(t *testing.T) {
	cfg := Config{Focus: regexp.MustCompile(`^(sandbox-id-exact|deadline-.*)$`), Skip: regexp.MustCompile(`hung`)}
	var got []string
	for _, check := range selectedChecks(cfg) {
		got = append(got, check.ID)
	}
	want := []string{"sandbox-id-exact", "deadline-short"}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("selected %v, want %v", got, want)
	}
}

func TestCheckIDsAreUniqueAndCiteARule(t *testing.T) {
	seen := make(map[string]bool)
	for _, check := range Checks() {
		if seen[check.ID] {
			t.Errorf("duplicate check ID %s", check.ID)
		}
		seen[check.ID] = true
		if check.Rule == "" || check.Statement == "" || check.run == nil {
			t.Errorf("check %s lacks a rule, statement or body", check.ID)
		}
	}
	for _, id := range []string{"sandbox-id-exact", "no-app-container-ids", "unreachable-is-error", "no-plain-containers",
		"stopped-listed-notready", "removed-not-found", "restarted-pod-ids", "deadline-short", "deadline-hung-runtime",
		"concurrent-lists-agree", "ids-stable-across-relaunch", "scale-listing", "pod-identity", "host-network-marked",
		"recreated-pod-own-identity", "listing-fresh"} {
		if !seen[id] {
			t.Errorf("check %s is missing", id)
		}
	}
}
