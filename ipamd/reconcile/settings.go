package reconcile

import (
	"errors"
	"fmt"
	"time"
)

// Settings is the reconciler's part of ipamd's configuration, which ipamd
// reads under reconcile and embeds as it is (package config only
// composes): this package owns the fields, their defaults (DefaultSettings,
// from the Default* constants New also falls back to) and their validation.
// The daemon hands them to New in Config.
type Settings struct {
	// Interval between passes; one pass also runs at start. Default 60s.
	Interval time.Duration `yaml:"interval" desc:"time between reconcile passes (one also runs at start)"`
	// Grace: an assignment younger than this is never released, so a pod
	// whose ADD raced the listing keeps its IP. Default 30s.
	Grace time.Duration `yaml:"grace" desc:"minimum age of an assignment before the reconciler may release it"`
	// ListTimeout bounds one ListSandboxes call. Default 10s.
	ListTimeout time.Duration `yaml:"listTimeout" desc:"deadline of one sandbox listing through the adapter"`
}

// DefaultSettings returns the defaults stated on Settings' fields.
func DefaultSettings() Settings {
	return Settings{Interval: DefaultInterval, Grace: DefaultGrace, ListTimeout: DefaultListTimeout}
}

// Validate reports every invalid field, each named by its YAML name; ipamd
// prefixes "reconcile.".
func (s Settings) Validate() error {
	var errs []error
	for _, f := range []struct {
		name string
		d    time.Duration
	}{{"interval", s.Interval}, {"grace", s.Grace}, {"listTimeout", s.ListTimeout}} {
		if f.d <= 0 {
			errs = append(errs, fmt.Errorf("%s must be positive, got %s", f.name, f.d))
		}
	}
	return errors.Join(errs...)
}
