package shared

import (
	"log/slog"
	"testing"

	hclog "github.com/hashicorp/go-hclog"
)

// Each level keeps its name and go-plugin level both ways; a level between
// two named ones takes the more verbose one's, as the switches this table
// replaced did.
func TestLevelTable(t *testing.T) {
	for _, tc := range []struct {
		level slog.Level
		name  string
		hclog hclog.Level
		back  slog.Level
	}{
		{LevelTrace - 1, "trace", hclog.Trace, LevelTrace},
		{LevelTrace, "trace", hclog.Trace, LevelTrace},
		{slog.LevelDebug - 1, "trace", hclog.Trace, LevelTrace},
		{slog.LevelDebug, "debug", hclog.Debug, slog.LevelDebug},
		{slog.LevelInfo, "info", hclog.Info, slog.LevelInfo},
		{slog.LevelWarn + 1, "warn", hclog.Warn, slog.LevelWarn},
		{slog.LevelError, "error", hclog.Error, slog.LevelError},
		{slog.LevelError + 4, "error", hclog.Error, slog.LevelError},
	} {
		if got := LevelName(tc.level); got != tc.name {
			t.Errorf("LevelName(%v) = %q, want %q", tc.level, got, tc.name)
		}
		if got := LevelFromName(tc.name); got != tc.back {
			t.Errorf("LevelFromName(%q) = %v, want %v", tc.name, got, tc.back)
		}
		if got := HclogLevel(tc.level); got != tc.hclog {
			t.Errorf("HclogLevel(%v) = %v, want %v", tc.level, got, tc.hclog)
		}
		if got := SlogLevel(tc.hclog); got != tc.back {
			t.Errorf("SlogLevel(%v) = %v, want %v", tc.hclog, got, tc.back)
		}
	}
	for _, name := range []string{"", "verbose", "WARN"} {
		want := map[string]slog.Level{"WARN": slog.LevelWarn}[name]
		if got := LevelFromName(name); got != want {
			t.Errorf("LevelFromName(%q) = %v, want %v", name, got, want)
		}
	}
	if got := SlogLevel(hclog.Off); got != slog.LevelInfo {
		t.Errorf("SlogLevel(Off) = %v, want info", got)
	}
}
