package host

import (
	"context"
	"io"
	"log"
	"log/slog"

	hclog "github.com/hashicorp/go-hclog"

	"github.com/sandboxipam/sandboxipam/runtime/plugin/internal/shared"
)

// lowestEnabledLevel is the most verbose level logger lets through, named
// as the plugin reads it from shared.LogLevelEnv.
func lowestEnabledLevel(logger *slog.Logger) string {
	for _, level := range shared.Levels() {
		if logger.Enabled(context.Background(), level) {
			return shared.LevelName(level)
		}
	}
	return shared.LevelName(slog.LevelError)
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
	b.logger.Log(context.Background(), shared.SlogLevel(level), msg, args...)
}
func (b *slogBridge) Trace(msg string, args ...any) { b.Log(hclog.Trace, msg, args...) }
func (b *slogBridge) Debug(msg string, args ...any) { b.Log(hclog.Debug, msg, args...) }
func (b *slogBridge) Info(msg string, args ...any)  { b.Log(hclog.Info, msg, args...) }
func (b *slogBridge) Warn(msg string, args ...any)  { b.Log(hclog.Warn, msg, args...) }
func (b *slogBridge) Error(msg string, args ...any) { b.Log(hclog.Error, msg, args...) }

func (b *slogBridge) enabled(level hclog.Level) bool {
	return b.logger.Enabled(context.Background(), shared.SlogLevel(level))
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
		level = shared.SlogLevel(opts.ForceLevel)
	}
	return slog.NewLogLogger(b.logger.Handler(), level)
}

func (b *slogBridge) StandardWriter(opts *hclog.StandardLoggerOptions) io.Writer {
	return b.StandardLogger(opts).Writer()
}
