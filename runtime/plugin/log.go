package plugin

import (
	"io"
	"log/slog"
	"os"

	"github.com/sandboxipam/sandboxipam/runtime/plugin/internal/shared"
)

// LevelTrace is the slog level that go-plugin's trace lines map to.
const LevelTrace = shared.LevelTrace

// hclogTimeFormat is the only timestamp layout go-plugin's host side
// parses from a plugin's JSON log line.
const hclogTimeFormat = "2006-01-02T15:04:05.000000Z07:00"

// NewLogger returns the logger an adapter uses inside a plugin binary: it
// writes go-plugin's JSON log lines to stderr, which the host parses and
// re-logs, level and attributes intact, into its own *slog.Logger. Serve
// installs it as slog's default; call it yourself only to log before
// Serve.
func NewLogger() *slog.Logger {
	return newPluginLogger(os.Stderr, shared.LevelFromName(os.Getenv(shared.LogLevelEnv)))
}

func newPluginLogger(w io.Writer, level slog.Level) *slog.Logger {
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{
		Level:       level,
		ReplaceAttr: hclogJSONAttr,
	}))
}

// hclogJSONAttr renames slog's built-in keys to the ones go-plugin's host
// side reads (@timestamp, @level, @message).
func hclogJSONAttr(groups []string, attr slog.Attr) slog.Attr {
	if len(groups) > 0 {
		return attr
	}
	switch attr.Key {
	case slog.TimeKey:
		return slog.String("@timestamp", attr.Value.Time().Format(hclogTimeFormat))
	case slog.LevelKey:
		level, _ := attr.Value.Any().(slog.Level)
		return slog.String("@level", shared.LevelName(level))
	case slog.MessageKey:
		return slog.String("@message", attr.Value.String())
	}
	return attr
}
