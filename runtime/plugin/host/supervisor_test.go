package host

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/sandboxipam/sandboxipam/internal/testadapter"
	"github.com/sandboxipam/sandboxipam/internal/testsupport"
	"github.com/sandboxipam/sandboxipam/runtime"
	"github.com/sandboxipam/sandboxipam/runtime/plugin/pluginconf"
)

// ownAdapterCopy copies the testadapter binary to a path the test may
// replace or remove.
func ownAdapterCopy(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "adapter")
	installAdapter(t, testadapter.Build(t), path)
	return path
}

// installAdapter copies src to dst atomically, as a package manager would.
func installAdapter(t *testing.T, src, dst string) {
	t.Helper()
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	tmp := dst + ".tmp"
	out, err := os.OpenFile(tmp, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, dst); err != nil {
		t.Fatal(err)
	}
}

func newTestSupervisor(t *testing.T, cfg Config) *Supervisor {
	t.Helper()
	s := NewSupervisor(SupervisorConfig{
		Plugin: cfg,
		Supervision: pluginconf.Supervision{
			MinBackoff: 10 * time.Millisecond,
			MaxBackoff: 50 * time.Millisecond,
			// Only exits are noticed here, at once; health checks would
			// only add noise.
			HealthInterval: time.Minute,
		},
	})
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func waitHealth(t *testing.T, s *Supervisor, what string, cond func(Health) bool) Health {
	t.Helper()
	var health Health
	testsupport.Wait(t, what, func() (bool, string) {
		health = s.Health()
		return cond(health), fmt.Sprintf("%+v", health)
	})
	return health
}

func TestSupervisorRelaunchesKilledPlugin(t *testing.T) {
	statePath := writeState(t, fixtureState())
	s := newTestSupervisor(t, pluginConfig(t, statePath))
	ctx := testContext(t)
	if err := s.Start(ctx); err != nil {
		t.Fatalf("Start: %v", err)
	}
	first := s.Health()
	wantInfo := runtime.Info{
		AdapterName: testadapter.Name, AdapterVersion: testadapter.Version,
		RuntimeName: "containerd", RuntimeVersion: "1.6.20", Endpoint: "file://" + statePath,
	}
	if first.State != HealthHealthy || first.PID <= 0 || first.Restarts != 0 || first.Info != wantInfo {
		t.Fatalf("Health after Start = %+v, want healthy with a PID, 0 restarts and Info %+v", first, wantInfo)
	}
	if _, err := s.ListSandboxes(ctx); err != nil {
		t.Fatalf("ListSandboxes: %v", err)
	}

	killPlugin(t, first.PID)
	health := waitHealth(t, s, "relaunched", func(h Health) bool { return h.State == HealthHealthy && h.Restarts == 1 })
	if health.PID == first.PID || health.PID <= 0 {
		t.Errorf("PID after relaunch = %d, first was %d", health.PID, first.PID)
	}
	if !strings.Contains(health.LastError, "signal: killed") {
		t.Errorf("LastError = %q, want the plugin's death", health.LastError)
	}
	sandboxes, err := s.ListSandboxes(ctx)
	if err != nil {
		t.Fatalf("ListSandboxes after relaunch: %v", err)
	}
	if !reflect.DeepEqual(sandboxes, fixtureSandboxes()) {
		t.Errorf("ListSandboxes after relaunch = %+v", sandboxes)
	}
	if !processGone(first.PID) {
		t.Errorf("killed plugin %d still in /proc", first.PID)
	}
}

func TestSupervisorCallInFlightWhenPluginDies(t *testing.T) {
	statePath := writeState(t, fixtureState())
	logs := newRecorder()
	cfg := pluginConfig(t, statePath)
	cfg.Logger = slog.New(logs)
	s := newTestSupervisor(t, cfg)
	ctx := testContext(t)
	if err := s.Start(ctx); err != nil {
		t.Fatalf("Start: %v", err)
	}
	updateState(t, statePath, func(st *testadapter.State) { st.Hang = true })
	errs := make(chan error, 1)
	go func() {
		_, err := s.ListSandboxes(ctx)
		errs <- err
	}()
	if _, err := logs.waitFor(ctx, "call hangs until its context ends"); err != nil {
		t.Fatal(err)
	}
	killPlugin(t, s.Health().PID)
	if err := <-errs; !errors.Is(err, ErrPluginCrashed) || !errors.Is(err, runtime.ErrUnavailable) {
		t.Fatalf("call in flight = %v, want ErrPluginCrashed and runtime.ErrUnavailable", err)
	}
	updateState(t, statePath, func(st *testadapter.State) { st.Hang = false })
	waitHealth(t, s, "relaunched", func(h Health) bool { return h.State == HealthHealthy && h.Restarts == 1 })
	if _, err := s.ListSandboxes(ctx); err != nil {
		t.Fatalf("ListSandboxes after relaunch: %v", err)
	}
}

func TestSupervisorUnavailableWhileDown(t *testing.T) {
	statePath := writeState(t, fixtureState())
	cfg := pluginConfig(t, statePath)
	cfg.Path = ownAdapterCopy(t)
	s := newTestSupervisor(t, cfg)
	ctx := testContext(t)
	if err := s.Start(ctx); err != nil {
		t.Fatalf("Start: %v", err)
	}

	// The binary goes away, then the plugin dies: relaunches fail.
	if err := os.Remove(cfg.Path); err != nil {
		t.Fatal(err)
	}
	killPlugin(t, s.Health().PID)
	down := waitHealth(t, s, "a relaunch failed", func(h Health) bool {
		return h.State == HealthUnhealthy && strings.Contains(h.LastError, ErrBinaryNotFound.Error())
	})
	if down.State == HealthHealthy || down.PID != 0 {
		t.Errorf("Health while down = %+v", down)
	}
	for name, call := range map[string]func() error{
		"Info":          func() error { _, err := s.Info(ctx); return err },
		"ListSandboxes": func() error { _, err := s.ListSandboxes(ctx); return err },
		"GetSandbox":    func() error { _, err := s.GetSandbox(ctx, fixtureSandboxes()[0].ID); return err },
	} {
		err := call()
		if !errors.Is(err, runtime.ErrUnavailable) {
			t.Errorf("%s while down = %v, want runtime.ErrUnavailable", name, err)
		}
		if ctx.Err() != nil {
			t.Fatalf("%s while down waited out the test's context", name)
		}
	}

	installAdapter(t, testadapter.Build(t), cfg.Path)
	waitHealth(t, s, "relaunched", func(h Health) bool { return h.State == HealthHealthy && h.Restarts == 1 })
	if _, err := s.GetSandbox(ctx, fixtureSandboxes()[0].ID); err != nil {
		t.Fatalf("GetSandbox after relaunch: %v", err)
	}
}

func TestSupervisorStartFailsThenRetries(t *testing.T) {
	statePath := writeState(t, fixtureState())
	cfg := pluginConfig(t, statePath)
	cfg.Path = filepath.Join(t.TempDir(), "adapter")
	s := newTestSupervisor(t, cfg)
	ctx := testContext(t)
	if err := s.Start(ctx); !errors.Is(err, ErrBinaryNotFound) {
		t.Fatalf("Start without a binary = %v, want ErrBinaryNotFound", err)
	}
	if _, err := s.ListSandboxes(ctx); !errors.Is(err, runtime.ErrUnavailable) {
		t.Fatalf("ListSandboxes before the first launch = %v, want runtime.ErrUnavailable", err)
	}
	installAdapter(t, testadapter.Build(t), cfg.Path)
	health := waitHealth(t, s, "launched", func(h Health) bool { return h.State == HealthHealthy })
	if health.Restarts != 0 {
		t.Errorf("Restarts after the first successful launch = %d, want 0", health.Restarts)
	}
	if _, err := s.ListSandboxes(ctx); err != nil {
		t.Fatalf("ListSandboxes: %v", err)
	}
}

func TestSupervisorCloseLeavesNoProcess(t *testing.T) {
	s := newTestSupervisor(t, pluginConfig(t, writeState(t, fixtureState())))
	ctx := testContext(t)
	if err := s.Start(ctx); err != nil {
		t.Fatalf("Start: %v", err)
	}
	pid := s.Health().PID
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if !processGone(pid) {
		t.Errorf("plugin %d still in /proc after Close", pid)
	}
	health := s.Health()
	if health.State != HealthStopped || health.State == HealthHealthy || health.PID != 0 {
		t.Errorf("Health after Close = %+v", health)
	}
	if _, err := s.ListSandboxes(ctx); !errors.Is(err, runtime.ErrUnavailable) {
		t.Errorf("ListSandboxes after Close = %v, want runtime.ErrUnavailable", err)
	}
	if err := s.Start(ctx); err == nil {
		t.Error("Start after Close succeeded")
	}
}

// A plugin whose gRPC server stops answering, while its process lives, is
// relaunched by the health check.
func TestSupervisorRelaunchesPluginFailingHealthCheck(t *testing.T) {
	s := NewSupervisor(SupervisorConfig{
		Plugin:      pluginConfig(t, writeState(t, fixtureState())),
		Supervision: pluginconf.Supervision{MinBackoff: 10 * time.Millisecond, HealthInterval: 500 * time.Millisecond},
	})
	t.Cleanup(func() { _ = s.Close() })
	if err := s.Start(testContext(t)); err != nil {
		t.Fatalf("Start: %v", err)
	}
	first := s.Health().PID
	stopProcess(t, first)
	// At least one relaunch: on a very busy machine a slow ping may cost
	// the new plugin its place too.
	health := waitHealth(t, s, "relaunched", func(h Health) bool { return h.State == HealthHealthy && h.Restarts >= 1 })
	if health.PID == first {
		t.Errorf("PID after relaunch = %d, same as the stopped plugin", health.PID)
	}
	if !strings.Contains(health.LastError, "health check") {
		t.Errorf("LastError = %q, want a failed health check", health.LastError)
	}
	if !processGone(first) {
		t.Errorf("stopped plugin %d still in /proc after its relaunch", first)
	}
}
