package reconcile

import (
	"strings"
	"testing"
)

func TestDefaultSettingsAreNewsFallbacksAndValidate(t *testing.T) {
	def, tun := DefaultSettings(), DefaultTuning()
	if err := def.Validate(); err != nil {
		t.Fatalf("DefaultSettings().Validate() = %v", err)
	}
	if err := tun.Validate(); err != nil {
		t.Fatalf("DefaultTuning().Validate() = %v", err)
	}
	r := New(nil, nil, Config{})
	if got := (Settings{Interval: r.cfg.Interval, Grace: r.cfg.Grace}); got != def {
		t.Errorf("New's defaults = %+v, want DefaultSettings() %+v", got, def)
	}
	if got := (Tuning{ListTimeout: r.cfg.ListTimeout, LinkGrace: r.cfg.LinkGrace}); got != tun {
		t.Errorf("New's defaults = %+v, want DefaultTuning() %+v", got, tun)
	}
}

func TestSettingsValidateNamesEveryField(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want []string
	}{
		{Settings{Interval: 0, Grace: -1}.Validate(), []string{"interval must be positive, got 0s", "grace must be positive, got -1ns"}},
		{Tuning{ListTimeout: 0, LinkGrace: -1}.Validate(), []string{"listTimeout must be positive, got 0s", "linkGrace must be positive, got -1ns"}},
	} {
		for _, want := range tc.want {
			if tc.err == nil || !strings.Contains(tc.err.Error(), want) {
				t.Errorf("Validate() = %v, want it to contain %q", tc.err, want)
			}
		}
	}
}
