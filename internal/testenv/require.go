package testenv

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/sandboxipam/sandboxipam/internal/testsupport"
)

// ErrUnavailable: this machine cannot run the real runtimes (not root, not
// Linux, or the packages cannot be installed).
var ErrUnavailable = errors.New("real runtimes unavailable")

const (
	// installTimeout bounds apt-get update and install on a fresh machine.
	installTimeout = 10 * time.Minute
	// sharedStartTimeout bounds starting a daemon in TestMain.
	sharedStartTimeout = 2 * time.Minute
)

// availability caches, per process, whether the real runtimes can run
// here: apt-get must not run once per test.
var availability struct {
	once sync.Once
	err  error
}

// Available reports, once per process, why real runtimes cannot run here:
// nil when they can. It installs missing packages as a side effect.
func Available() error {
	availability.once.Do(func() {
		if os.Geteuid() != 0 {
			availability.err = fmt.Errorf("%w: needs root (uid %d)", ErrUnavailable, os.Geteuid())
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), installTimeout)
		defer cancel()
		if err := EnsurePackages(ctx); err != nil {
			availability.err = fmt.Errorf("%w: %w", ErrUnavailable, err)
		}
	})
	return availability.err
}

// Require skips t when the real runtimes cannot run here, and fails it
// instead in CI (testsupport.IsCI): there a skipped runtime test would
// hide a gap.
func Require(t testing.TB) {
	t.Helper()
	if err := Available(); err != nil {
		skipOrFail(t, err)
	}
}

func skipOrFail(t testing.TB, err error) {
	t.Helper()
	testsupport.SkipOrFail(t, "real runtime unavailable: %v", err)
}

// shortTempDir makes a temp dir short enough for the sockets under it,
// falling back to /tmp when TMPDIR is long.
func shortTempDir(prefix string) (string, error) {
	base := os.TempDir()
	if len(base) > maxDirLen-len(prefix)-12 {
		base = "/tmp"
	}
	dir, err := os.MkdirTemp(base, prefix)
	if err != nil {
		return "", fmt.Errorf("instance dir: %w", err)
	}
	return filepath.Clean(dir), nil
}

// testLogger logs daemon progress to stderr under -v, warnings otherwise.
func testLogger() *slog.Logger {
	level := slog.LevelWarn
	if testing.Verbose() {
		level = slog.LevelInfo
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
}
