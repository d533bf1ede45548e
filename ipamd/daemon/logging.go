package daemon

import (
	"io"
	"log/slog"

	"github.com/sandboxipam/sandboxipam/ipamd/config"
)

// NewLogger builds the daemon's logger from log.level and log.format (both
// validated by config).
func NewLogger(cfg config.Log, w io.Writer) *slog.Logger {
	var level slog.Level
	_ = level.UnmarshalText([]byte(cfg.Level))
	opts := &slog.HandlerOptions{Level: level}
	if cfg.Format == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}
