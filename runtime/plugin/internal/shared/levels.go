package shared

import (
	"log/slog"
	"strings"

	hclog "github.com/hashicorp/go-hclog"
)

// LevelTrace is the slog level that go-plugin's trace lines map to.
const LevelTrace = slog.LevelDebug - 4

// levels pairs each level that crosses the boundary with its name (in
// LogLevelEnv and a plugin's JSON lines) and go-plugin's hclog level: the
// one table every direction reads, most verbose first.
var levels = [...]struct {
	slog  slog.Level
	name  string
	hclog hclog.Level
}{
	{LevelTrace, "trace", hclog.Trace},
	{slog.LevelDebug, "debug", hclog.Debug},
	{slog.LevelInfo, "info", hclog.Info},
	{slog.LevelWarn, "warn", hclog.Warn},
	{slog.LevelError, "error", hclog.Error},
}

// levelIndex is the entry of the most severe listed level at or below
// level; levels between two entries round down, as slog's handlers do.
func levelIndex(level slog.Level) int {
	i := 0
	for j, l := range levels {
		if level >= l.slog {
			i = j
		}
	}
	return i
}

// LevelName is level's name, as LevelFromName reads it.
func LevelName(level slog.Level) string { return levels[levelIndex(level)].name }

// LevelFromName reads a level's name; an unknown name is info.
func LevelFromName(name string) slog.Level {
	for _, l := range levels {
		if strings.EqualFold(l.name, name) {
			return l.slog
		}
	}
	return slog.LevelInfo
}

// Levels are the levels LevelName names, most verbose first.
func Levels() []slog.Level {
	out := make([]slog.Level, len(levels))
	for i, l := range levels {
		out[i] = l.slog
	}
	return out
}

// HclogLevel is go-plugin's level for level.
func HclogLevel(level slog.Level) hclog.Level { return levels[levelIndex(level)].hclog }

// SlogLevel is the slog level of one of go-plugin's; any other is info.
func SlogLevel(level hclog.Level) slog.Level {
	for _, l := range levels {
		if l.hclog == level {
			return l.slog
		}
	}
	return slog.LevelInfo
}
