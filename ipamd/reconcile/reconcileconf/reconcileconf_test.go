package reconcileconf

import (
	"strings"
	"testing"
)

func TestDefaultsValidate(t *testing.T) {
	if err := DefaultSettings().Validate(); err != nil {
		t.Fatalf("DefaultSettings().Validate() = %v", err)
	}
	if err := DefaultTuning().Validate(); err != nil {
		t.Fatalf("DefaultTuning().Validate() = %v", err)
	}
}

func TestValidateNamesEveryField(t *testing.T) {
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
