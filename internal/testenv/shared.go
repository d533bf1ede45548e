package testenv

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"testing"
)

// Shared is a daemon for all tests of one package: Run (in TestMain)
// enables it, the first test that calls Get starts it, and Run stops it
// after the last test. A package whose selected tests never Get it (go
// test -run) never starts it. Build one with SharedDocker or
// SharedContainerd.
type Shared[T any] struct {
	dir       string // the caller's Dir; empty: a temporary one
	dirPrefix string
	start     func(ctx context.Context, dir string, logger *slog.Logger) (T, func(context.Context) error, error)

	enabled bool // set by Run, before any test runs
	logger  *slog.Logger
	once    sync.Once
	value   T
	stop    func(context.Context) error
	err     error
}

// Get returns the daemon, starting it on first use. When the machine
// cannot run it (not root, packages missing) it skips t, or fails it when
// CI=true; when the daemon fails to start on a machine that can run it,
// it fails t. Under -short it always skips.
func (s *Shared[T]) Get(t testing.TB) T {
	t.Helper()
	if testing.Short() {
		t.Skip("skipping real-runtime test in -short mode")
	}
	if !s.enabled {
		t.Fatal("testenv: shared daemon used without testenv.Run in TestMain, which stops it")
	}
	s.once.Do(s.startOnce)
	if errors.Is(s.err, ErrUnavailable) {
		skipOrFail(t, s.err)
	}
	if s.err != nil {
		t.Fatalf("shared daemon did not start: %v", s.err)
	}
	return s.value
}

func (s *Shared[T]) startOnce() {
	if s.err = Available(); s.err != nil {
		return
	}
	dir := s.dir
	if dir == "" {
		if dir, s.err = shortTempDir(s.dirPrefix); s.err != nil {
			return
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), sharedStartTimeout)
	defer cancel()
	s.value, s.stop, s.err = s.start(ctx, dir, s.logger)
}

// sharedOf describes a daemon that start starts in dir, and whose Stop
// Run calls: every Shared* constructor but the options it fills in.
func sharedOf[T interface{ Stop(context.Context) error }](dir, dirPrefix string, start func(ctx context.Context, dir string, logger *slog.Logger) (T, error)) *Shared[T] {
	return &Shared[T]{
		dir:       dir,
		dirPrefix: dirPrefix,
		start: func(ctx context.Context, dir string, logger *slog.Logger) (T, func(context.Context) error, error) {
			v, err := start(ctx, dir, logger)
			if err != nil {
				var zero T
				return zero, nil, err
			}
			return v, v.Stop, nil
		},
	}
}

// SharedDocker describes a dockerd for the tests of a package. An empty
// opts.Dir means a fresh temporary directory.
func SharedDocker(opts DockerOptions) *Shared[*Docker] {
	return sharedOf(opts.Dir, "sbxipam-dkr-", func(ctx context.Context, dir string, logger *slog.Logger) (*Docker, error) {
		opts.Dir, opts.Logger = dir, cmpOrLogger(opts.Logger, logger)
		return StartDocker(ctx, opts)
	})
}

// SharedContainerd describes a containerd for the tests of a package. An
// empty opts.Dir means a fresh temporary directory.
func SharedContainerd(opts ContainerdOptions) *Shared[*Containerd] {
	return sharedOf(opts.Dir, "sbxipam-ctd-", func(ctx context.Context, dir string, logger *slog.Logger) (*Containerd, error) {
		opts.Dir, opts.Logger = dir, cmpOrLogger(opts.Logger, logger)
		return StartContainerd(ctx, opts)
	})
}

// SharedDaemon is a *Shared[T] of any daemon kind, for Run.
type SharedDaemon interface {
	enable(logger *slog.Logger)
	stopIfStarted(ctx context.Context) error
}

func (s *Shared[T]) enable(logger *slog.Logger) {
	s.enabled, s.logger = true, logger
}

func (s *Shared[T]) stopIfStarted(ctx context.Context) error {
	if s.stop == nil {
		return nil
	}
	return s.stop(ctx)
}

// Run is a TestMain body: it enables the shared daemons, runs the tests,
// stops the daemons that were started, in reverse order, and returns the
// exit code (failing when a stop fails).
func Run(m *testing.M, daemons ...SharedDaemon) int {
	flag.Parse()
	logger := testLogger()
	for _, d := range daemons {
		d.enable(logger)
	}
	code := m.Run()
	ctx, cancel := context.WithTimeout(context.Background(), sharedStartTimeout)
	defer cancel()
	for i := len(daemons) - 1; i >= 0; i-- {
		if err := daemons[i].stopIfStarted(ctx); err != nil {
			fmt.Fprintf(os.Stderr, "testenv: stop: %v\n", err)
			code = failingCode(code)
		}
	}
	return code
}

func cmpOrLogger(a, b *slog.Logger) *slog.Logger {
	if a != nil {
		return a
	}
	return b
}

// failingCode turns a passing exit code into a failing one.
func failingCode(code int) int {
	if code == 0 {
		return 1
	}
	return code
}
