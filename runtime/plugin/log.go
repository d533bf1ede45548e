package plugin

import (
	"context"
	"io"
	"log"
	"log/slog"
	"os"
	"strings"

	hclog "github.com/hashicorp/go-hclog"
)

// LevelTrace is the slog level that go-plugin's trace lines map to.
const LevelTrace = slog.LevelDebug - 4

// hclogTimeFormat is the only timestamp layout go-plugin's host side
// parses from a plugin's JSON log line.
const hclogTimeFormat = "2006-01-02T15:04:05.000000Z07:00"

// NewLogger returns the logger an adapter uses inside a plugin binary: it
// writes go-plugin's JSON log lines to stderr, which the host parses and
// re-logs, level and attributes intact, into its own *slog.Logger. Serve
// installs it as slog's default; call it yourself only to log before
// Serve.
func NewLogger() *slog.Logger {
	return newPluginLogger(os.Stderr, levelFromEnv(os.Getenv(logLevelEnv)))
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
		return slog.String("@level", levelName(level))
	case slog.MessageKey:
		return slog.String("@message", attr.Value.String())
	}
	return attr
}

func levelName(level slog.Level) string {
	switch {
	case level < slog.LevelDebug:
		return "trace"
	case level < slog.LevelInfo:
		return "debug"
	case level < slog.LevelWarn:
		return "info"
	case level < slog.LevelError:
		return "warn"
	default:
		return "error"
	}
}

func levelFromEnv(name string) slog.Level {
	switch strings.ToLower(name) {
	case "trace":
		return LevelTrace
	case "debug":
		return slog.LevelDebug
	case "warn":
		return slog.LevelWarn
	case "error":
		return slog.LevelError
	default:
		return slog.LevelInfo
	}
}

// lowestEnabledLevel is the most verbose level logger lets through, named
// as levelFromEnv reads it.
func lowestEnabledLevel(logger *slog.Logger) string {
	for _, level := range []slog.Level{LevelTrace, slog.LevelDebug, slog.LevelInfo, slog.LevelWarn} {
		if logger.Enabled(context.Background(), level) {
			return levelName(level)
		}
	}
	return levelName(slog.LevelError)
}

func hclogLevel(level slog.Level) hclog.Level {
	switch {
	case level < slog.LevelDebug:
		return hclog.Trace
	case level < slog.LevelInfo:
		return hclog.Debug
	case level < slog.LevelWarn:
		return hclog.Info
	case level < slog.LevelError:
		return hclog.Warn
	default:
		return hclog.Error
	}
}

func slogLevel(level hclog.Level) slog.Level {
	switch level {
	case hclog.Trace:
		return LevelTrace
	case hclog.Debug:
		return slog.LevelDebug
	case hclog.Warn:
		return slog.LevelWarn
	case hclog.Error:
		return slog.LevelError
	default:
		return slog.LevelInfo
	}
}

// slogBridge is the host side: an hclog.Logger that writes to a
// *slog.Logger. go-plugin logs its own events and every line a plugin
// writes to stderr through it; a plugin's JSON lines arrive with their
// level, message and attributes.
type slogBridge struct {
	root    *slog.Logger
	name    string
	implied []any
	logger  *slog.Logger // root with name and implied attributes
}

var _ hclog.Logger = (*slogBridge)(nil)

func newSlogBridge(root *slog.Logger, name string, implied []any) *slogBridge {
	logger := root
	if name != "" {
		logger = logger.With("plugin", name)
	}
	if len(implied) > 0 {
		logger = logger.With(implied...)
	}
	return &slogBridge{root: root, name: name, implied: implied, logger: logger}
}

func (b *slogBridge) Log(level hclog.Level, msg string, args ...any) {
	b.logger.Log(context.Background(), slogLevel(level), msg, args...)
}

func (b *slogBridge) Trace(msg string, args ...any) { b.Log(hclog.Trace, msg, args...) }
func (b *slogBridge) Debug(msg string, args ...any) { b.Log(hclog.Debug, msg, args...) }
func (b *slogBridge) Info(msg string, args ...any)  { b.Log(hclog.Info, msg, args...) }
func (b *slogBridge) Warn(msg string, args ...any)  { b.Log(hclog.Warn, msg, args...) }
func (b *slogBridge) Error(msg string, args ...any) { b.Log(hclog.Error, msg, args...) }

func (b *slogBridge) enabled(level hclog.Level) bool {
	return b.logger.Enabled(context.Background(), slogLevel(level))
}

func (b *slogBridge) IsTrace() bool { return b.enabled(hclog.Trace) }
func (b *slogBridge) IsDebug() bool { return b.enabled(hclog.Debug) }
func (b *slogBridge) IsInfo() bool  { return b.enabled(hclog.Info) }
func (b *slogBridge) IsWarn() bool  { return b.enabled(hclog.Warn) }
func (b *slogBridge) IsError() bool { return b.enabled(hclog.Error) }

func (b *slogBridge) ImpliedArgs() []any { return b.implied }

func (b *slogBridge) With(args ...any) hclog.Logger {
	implied := append(append([]any(nil), b.implied...), args...)
	return newSlogBridge(b.root, b.name, implied)
}

func (b *slogBridge) Name() string { return b.name }

func (b *slogBridge) Named(name string) hclog.Logger {
	if b.name != "" {
		name = b.name + "." + name
	}
	return newSlogBridge(b.root, name, b.implied)
}

func (b *slogBridge) ResetNamed(name string) hclog.Logger {
	return newSlogBridge(b.root, name, b.implied)
}

// SetLevel does nothing: the *slog.Logger's handler decides.
func (b *slogBridge) SetLevel(hclog.Level) {}

// GetLevel reports the handler's level, so that go-plugin skips parsing
// plugin lines the handler would drop.
func (b *slogBridge) GetLevel() hclog.Level {
	for _, level := range []hclog.Level{hclog.Trace, hclog.Debug, hclog.Info, hclog.Warn, hclog.Error} {
		if b.enabled(level) {
			return level
		}
	}
	return hclog.Off
}

func (b *slogBridge) StandardLogger(opts *hclog.StandardLoggerOptions) *log.Logger {
	level := slog.LevelInfo
	if opts != nil && opts.ForceLevel != hclog.NoLevel {
		level = slogLevel(opts.ForceLevel)
	}
	return slog.NewLogLogger(b.logger.Handler(), level)
}

func (b *slogBridge) StandardWriter(opts *hclog.StandardLoggerOptions) io.Writer {
	return b.StandardLogger(opts).Writer()
}
