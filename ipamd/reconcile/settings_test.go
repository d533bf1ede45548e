package reconcile

import (
	"strings"
	"testing"
)

func TestDefaultSettingsAreNewsFallbacksAndValidate(t *testing.T) {
	def := DefaultSettings()
	if err := def.Validate(); err != nil {
		t.Fatalf("DefaultSettings().Validate() = %v", err)
	}
	r := New(nil, nil, Config{})
	if got := (Settings{Interval: r.cfg.Interval, Grace: r.cfg.Grace, ListTimeout: r.cfg.ListTimeout}); got != def {
		t.Errorf("New's defaults = %+v, want DefaultSettings() %+v", got, def)
	}
}

func TestSettingsValidateNamesEveryField(t *testing.T) {
	err := Settings{Interval: 0, Grace: -1, ListTimeout: 0}.Validate()
	for _, want := range []string{"interval must be positive, got 0s", "grace must be positive, got -1ns", "listTimeout must be positive, got 0s"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate() = %v, want it to contain %q", err, want)
		}
	}
}
