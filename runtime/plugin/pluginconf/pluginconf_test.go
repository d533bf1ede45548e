package pluginconf

import (
	"strings"
	"testing"
	"time"
)

func TestDefaultSupervisionValidatesAndIsWhatZeroFieldsGet(t *testing.T) {
	def := DefaultSupervision()
	if err := def.Validate(); err != nil {
		t.Fatalf("DefaultSupervision().Validate() = %v", err)
	}
	if got := (Supervision{}).WithDefaults(); got != def {
		t.Errorf("zero Supervision with defaults = %+v, want %+v", got, def)
	}
	if def.MinBackoff != 500*time.Millisecond {
		t.Errorf("MinBackoff default = %s, want the documented 500ms", def.MinBackoff)
	}
}

func TestSupervisionValidateNamesEveryField(t *testing.T) {
	err := Supervision{MinBackoff: 0, MaxBackoff: -time.Second, HealthInterval: 0}.Validate()
	for _, want := range []string{
		"minBackoff must be positive, got 0s",
		"maxBackoff must be at least minBackoff (0s), got -1s",
		"healthInterval must be positive, got 0s",
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate() = %v, want it to contain %q", err, want)
		}
	}
}
