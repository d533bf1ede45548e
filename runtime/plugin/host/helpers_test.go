package host

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sandboxipam/sandboxipam/internal/testadapter"
	"github.com/sandboxipam/sandboxipam/internal/testsupport"
	"github.com/sandboxipam/sandboxipam/runtime"
)

// waitLimit guards waits for something that must happen; it is no
// assertion on how fast, and as generous as testsupport's.
const waitLimit = testsupport.WaitDeadline

func fixtureSandboxes() []runtime.Sandbox {
	return []runtime.Sandbox{
		{
			ID:          "9f1e5a0c3b7d42e8a6c1f0b2d4e6a8c0b2d4f6a8c0e2b4d6f8a0c2e4b6d8f0a2",
			Name:        "web-0",
			Namespace:   "shop",
			UID:         "6b1f0c1e-2d3a-4b5c-8d9e-0f1a2b3c4d5e",
			Attempt:     2,
			State:       runtime.StateReady,
			CreatedAt:   time.Date(2026, 12, 2, 11, 30, 15, 123456789, time.UTC),
			NetNS:       "/var/run/netns/cni-1234",
			HostNetwork: false,
			IPs:         []netip.Addr{netip.MustParseAddr("198.18.0.7"), netip.MustParseAddr("fd00:198:18::7")},
			Labels:      map[string]string{"app": "web", "io.kubernetes.pod.name": "web-0"},
		},
		{
			ID:          "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
			Name:        "kube-proxy-x7k2p",
			Namespace:   "kube-system",
			UID:         "00000000-0000-4000-8000-000000000001",
			Attempt:     0,
			State:       runtime.StateNotReady,
			CreatedAt:   time.Date(2025, 1, 31, 23, 59, 59, 0, time.UTC),
			HostNetwork: true,
		},
	}
}

func fixtureState() testadapter.State {
	return testadapter.State{
		RuntimeName:    "containerd",
		RuntimeVersion: "1.6.20",
		Sandboxes:      fixtureSandboxes(),
	}
}

// writeState writes s to a new state file and returns its path.
func writeState(t testing.TB, s testadapter.State) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "state.json")
	if err := testadapter.WriteState(path, s); err != nil {
		t.Fatal(err)
	}
	return path
}

func updateState(t testing.TB, path string, change func(*testadapter.State)) {
	t.Helper()
	s, err := testadapter.ReadState(path)
	if err != nil {
		t.Fatal(err)
	}
	change(&s)
	if err := testadapter.WriteState(path, s); err != nil {
		t.Fatal(err)
	}
}

func pluginConfig(t testing.TB, statePath string) Config {
	return Config{
		Path:   testadapter.Build(t),
		Args:   []string{"--state=" + statePath},
		Logger: testLogger(t),
	}
}

// launch starts the testadapter plugin, closed when the test ends.
func launch(t testing.TB, cfg Config) *Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	client, err := Launch(ctx, cfg)
	if err != nil {
		t.Fatalf("Launch: %v", err)
	}
	t.Cleanup(func() { _ = client.Close() })
	return client
}

func testContext(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	t.Cleanup(cancel)
	return ctx
}

// testLogger logs to the test's log when -v is given, nowhere otherwise.
func testLogger(t testing.TB) *slog.Logger {
	if !testing.Verbose() {
		return slog.New(slog.NewTextHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelError + 1}))
	}
	return slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(b []byte) (int, error) {
	w.t.Log(string(b))
	return len(b), nil
}

// processGone reports whether no process with pid exists any more, as the
// process table (/proc) says. A zombie still counts as present.
func processGone(pid int) bool {
	_, err := os.Stat("/proc/" + strconv.Itoa(pid))
	return os.IsNotExist(err)
}

func killPlugin(t testing.TB, pid int) {
	t.Helper()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatalf("kill -9 %d: %v", pid, err)
	}
}

// recorder is a slog.Handler that keeps every record, for tests that
// check what reached the host's log.
type recorder struct {
	attrs []slog.Attr
	log   *recordLog
}

type recordLog struct {
	mu      sync.Mutex
	records []slog.Record
	changed chan struct{}
}

func newRecorder() *recorder {
	return &recorder{log: &recordLog{changed: make(chan struct{})}}
}

func (r *recorder) Enabled(context.Context, slog.Level) bool { return true }

func (r *recorder) Handle(_ context.Context, rec slog.Record) error {
	rec = rec.Clone()
	rec.AddAttrs(r.attrs...)
	r.log.mu.Lock()
	defer r.log.mu.Unlock()
	r.log.records = append(r.log.records, rec)
	close(r.log.changed)
	r.log.changed = make(chan struct{})
	return nil
}

func (r *recorder) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &recorder{attrs: append(append([]slog.Attr(nil), r.attrs...), attrs...), log: r.log}
}

func (r *recorder) WithGroup(string) slog.Handler { return r }

// waitFor returns the first record with message msg, waiting for it.
func (r *recorder) waitFor(ctx context.Context, msg string) (slog.Record, error) {
	for {
		r.log.mu.Lock()
		changed := r.log.changed
		for _, rec := range r.log.records {
			if rec.Message == msg {
				r.log.mu.Unlock()
				return rec, nil
			}
		}
		r.log.mu.Unlock()
		select {
		case <-changed:
		case <-ctx.Done():
			return slog.Record{}, fmt.Errorf("no log record %q: %w", msg, ctx.Err())
		}
	}
}

func recordAttrs(rec slog.Record) map[string]string {
	attrs := map[string]string{}
	rec.Attrs(func(a slog.Attr) bool {
		attrs[a.Key] = a.Value.String()
		return true
	})
	return attrs
}

// stopProcess freezes pid (SIGSTOP): alive, but answering nothing.
func stopProcess(t testing.TB, pid int) {
	t.Helper()
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatalf("kill -STOP %d: %v", pid, err)
	}
}
