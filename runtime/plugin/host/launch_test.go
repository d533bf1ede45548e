package host

import (
	"context"
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sandboxipam/sandboxipam/internal/testadapter"
	"github.com/sandboxipam/sandboxipam/runtime"
	"github.com/sandboxipam/sandboxipam/runtime/plugin"
	"github.com/sandboxipam/sandboxipam/runtime/plugin/internal/shared"
)

func TestLaunchRefusesMissingBinary(t *testing.T) {
	path := filepath.Join(t.TempDir(), "no-such-adapter")
	_, err := Launch(testContext(t), Config{Path: path, Logger: testLogger(t)})
	if !errors.Is(err, ErrBinaryNotFound) {
		t.Fatalf("Launch = %v, want ErrBinaryNotFound", err)
	}
	if !strings.Contains(err.Error(), path) {
		t.Errorf("error %q does not name %s", err, path)
	}
}

func TestLaunchRefusesNotExecutable(t *testing.T) {
	dir := t.TempDir()
	noExecBit := filepath.Join(dir, "adapter")
	if err := os.WriteFile(noExecBit, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	garbage := filepath.Join(dir, "garbage")
	if err := os.WriteFile(garbage, []byte("\x00\x01 not a program"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{noExecBit, dir, garbage} {
		_, err := Launch(testContext(t), Config{Path: path, Logger: testLogger(t)})
		if !errors.Is(err, ErrNotExecutable) {
			t.Errorf("Launch(%s) = %v, want ErrNotExecutable", path, err)
		}
	}
}

func TestLaunchRefusesNotAPlugin(t *testing.T) {
	cases := map[string]string{
		"prints to stdout":      "#!/bin/sh\necho hello from a shell script\n",
		"exits without a word":  "#!/bin/sh\necho oops >&2\nexit 3\n",
		"speaks another plugin": "#!/bin/sh\necho '1|1|unix|/tmp/x.sock|netrpc|'\nsleep 30\n",
	}
	for name, script := range cases {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "adapter.sh")
			if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
				t.Fatal(err)
			}
			_, err := Launch(testContext(t), Config{Path: path, Logger: testLogger(t)})
			switch {
			case name == "speaks another plugin" && !errors.Is(err, ErrIncompatibleVersion):
				t.Fatalf("Launch = %v, want ErrIncompatibleVersion", err)
			case name != "speaks another plugin" && !errors.Is(err, ErrNotPlugin):
				t.Fatalf("Launch = %v, want ErrNotPlugin", err)
			}
			t.Log(err)
		})
	}
}

func TestLaunchChecksumPin(t *testing.T) {
	cfg := pluginConfig(t, writeState(t, fixtureState()))
	sum, err := fileSHA256(cfg.Path)
	if err != nil {
		t.Fatal(err)
	}
	t.Run("mismatch", func(t *testing.T) {
		cfg := cfg
		cfg.SHA256 = strings.Repeat("ab", 32)
		_, err := Launch(testContext(t), cfg)
		if !errors.Is(err, ErrChecksumMismatch) {
			t.Fatalf("Launch = %v, want ErrChecksumMismatch", err)
		}
		for _, want := range []string{cfg.Path, cfg.SHA256, sum} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error %q does not name %s", err, want)
			}
		}
	})
	t.Run("match", func(t *testing.T) {
		cfg := cfg
		cfg.SHA256 = strings.ToUpper(sum)
		launch(t, cfg)
	})
	t.Run("malformed pin", func(t *testing.T) {
		cfg := cfg
		cfg.SHA256 = "abc"
		if _, err := Launch(testContext(t), cfg); err == nil || !strings.Contains(err.Error(), "64 hex digits") {
			t.Fatalf("Launch = %v, want an error about the pin's format", err)
		}
	})
}

func TestLaunchHonoursContext(t *testing.T) {
	dir := t.TempDir()
	path, pidFile := filepath.Join(dir, "silent.sh"), filepath.Join(dir, "pid")
	script := "#!/bin/sh\necho $$ >> " + pidFile + "\nexec sleep 60\n"
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(testContext(t))
	cancel()
	if _, err := Launch(ctx, Config{Path: path, Logger: testLogger(t)}); !errors.Is(err, context.Canceled) {
		t.Fatalf("Launch with a canceled context = %v, want context.Canceled", err)
	}

	// A binary that never completes the handshake: the start timeout, then
	// the process is gone.
	_, err := Launch(testContext(t), Config{Path: path, Logger: testLogger(t), StartTimeout: 300 * time.Millisecond})
	if !errors.Is(err, ErrNotPlugin) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Launch of a silent binary = %v, want ErrNotPlugin and context.DeadlineExceeded", err)
	}
	callerCtx, cancel := context.WithTimeout(testContext(t), 300*time.Millisecond)
	defer cancel()
	_, err = Launch(callerCtx, Config{Path: path, Logger: testLogger(t)})
	if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, ErrNotPlugin) {
		t.Fatalf("Launch of a silent binary past the caller's deadline = %v, want only context.DeadlineExceeded", err)
	}
	pids, err := os.ReadFile(pidFile)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
	// The canceled launch never started it; the two timed-out ones did,
	// unless a very busy machine ran out their time first.
	if fields := strings.Fields(string(pids)); len(fields) > 2 {
		t.Errorf("silent binary started %d times, want at most 2", len(fields))
	}
	for _, field := range strings.Fields(string(pids)) {
		pid, err := strconv.Atoi(field)
		if err != nil {
			t.Fatal(err)
		}
		if !processGone(pid) {
			t.Errorf("silent binary %d still in /proc after its launch failed", pid)
		}
	}
}

func TestCallHonoursDeadlineWhenPluginHangs(t *testing.T) {
	statePath := writeState(t, fixtureState())
	client := launch(t, pluginConfig(t, statePath))
	updateState(t, statePath, func(s *testadapter.State) { s.Hang = true })

	ctx, cancel := context.WithTimeout(testContext(t), 250*time.Millisecond)
	defer cancel()
	if _, err := client.GetSandbox(ctx, fixtureSandboxes()[0].ID); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("GetSandbox on a hung plugin = %v, want context.DeadlineExceeded", err)
	}
	updateState(t, statePath, func(s *testadapter.State) { s.Hang = false })
	if _, err := client.GetSandbox(testContext(t), fixtureSandboxes()[0].ID); err != nil {
		t.Fatalf("GetSandbox once the plugin answers again: %v", err)
	}
}

func TestCloseLeavesNoProcess(t *testing.T) {
	for _, mtls := range []bool{true, false} {
		cfg := pluginConfig(t, writeState(t, fixtureState()))
		cfg.DisableAutoMTLS = !mtls
		client := launch(t, cfg)
		pid := client.PID()
		if pid <= 0 || processGone(pid) {
			t.Fatalf("PID() = %d, and no such process", pid)
		}
		if client.Exited() {
			t.Fatal("Exited() before Close")
		}
		socketDir := filepath.Dir(client.plugin.ReattachConfig().Addr.String())
		if parent, err := socketParent(); err != nil || filepath.Dir(socketDir) != parent {
			t.Errorf("plugin socket directory %s is not under %s (%v)", socketDir, parent, err)
		}
		if err := client.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
		if !processGone(pid) {
			t.Errorf("plugin process %d still in /proc after Close", pid)
		}
		if _, err := os.Stat(socketDir); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("plugin socket directory %s left after Close (%v)", socketDir, err)
		}
		if !client.Exited() {
			t.Error("Exited() = false after Close")
		}
		if _, err := client.ListSandboxes(testContext(t)); !errors.Is(err, runtime.ErrUnavailable) {
			t.Errorf("ListSandboxes after Close = %v, want runtime.ErrUnavailable", err)
		}
		if err := client.Close(); err != nil {
			t.Errorf("second Close: %v", err)
		}
	}
}

func TestKillMidCallIsPluginCrashed(t *testing.T) {
	statePath := writeState(t, fixtureState())
	logs := newRecorder()
	cfg := pluginConfig(t, statePath)
	cfg.Logger = slog.New(logs)
	client := launch(t, cfg)
	updateState(t, statePath, func(s *testadapter.State) { s.Hang = true })

	ctx := testContext(t)
	errs := make(chan error, 1)
	go func() {
		_, err := client.ListSandboxes(ctx)
		errs <- err
	}()
	if _, err := logs.waitFor(ctx, "call hangs until its context ends"); err != nil {
		t.Fatal(err)
	}
	killPlugin(t, client.PID())
	err := <-errs
	if !errors.Is(err, ErrPluginCrashed) || !errors.Is(err, runtime.ErrUnavailable) {
		t.Fatalf("call in flight when the plugin died = %v, want ErrPluginCrashed and runtime.ErrUnavailable", err)
	}
	t.Log(err)
}

func TestPluginLogsReachHostLogger(t *testing.T) {
	statePath := writeState(t, fixtureState())
	logs := newRecorder()
	cfg := pluginConfig(t, statePath)
	cfg.Logger = slog.New(logs)
	client := launch(t, cfg)
	if err := client.Close(); err != nil { // drains the plugin's stderr
		t.Fatal(err)
	}
	rec, err := logs.waitFor(testContext(t), "testadapter serving")
	if err != nil {
		t.Fatal(err)
	}
	if rec.Level != slog.LevelInfo {
		t.Errorf("level = %v, want INFO", rec.Level)
	}
	attrs := recordAttrs(rec)
	if attrs["state"] != statePath || attrs["plugin"] != testadapter.Name {
		t.Errorf("attributes = %v, want state=%s plugin=%s", attrs, statePath, testadapter.Name)
	}
}

// The plugin logs at the host's level: a host that drops debug lines gets
// none from the plugin.
func TestPluginLogsAtHostLevel(t *testing.T) {
	logs := newRecorder()
	logger := slog.New(levelFilter{slog.LevelInfo, logs})
	if got := lowestEnabledLevel(logger); got != "info" {
		t.Errorf("lowestEnabledLevel = %q, want info", got)
	}
	// The plugin reads the level from the variable Launch sets.
	t.Setenv(shared.LogLevelEnv, "info")
	if plugin.NewLogger().Enabled(context.Background(), slog.LevelDebug) {
		t.Error("plugin logger at info accepts debug")
	}
}

type levelFilter struct {
	min slog.Level
	slog.Handler
}

func (f levelFilter) Enabled(_ context.Context, level slog.Level) bool { return level >= f.min }

// A binary another user could replace, by writing it or its directory, is
// never run: the host would run it with its own rights.
func TestLaunchRefusesBinaryOthersCanWrite(t *testing.T) {
	open := filepath.Join(t.TempDir(), "open")
	if err := os.Mkdir(open, 0o755); err != nil {
		t.Fatal(err)
	}
	inOpenDir := filepath.Join(open, "adapter")
	writable := filepath.Join(t.TempDir(), "adapter")
	for _, path := range []string{inOpenDir, writable} {
		if err := os.WriteFile(path, []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for path, mode := range map[string]os.FileMode{open: 0o777, writable: 0o757} {
		if err := os.Chmod(path, mode); err != nil {
			t.Fatal(err)
		}
	}
	for _, path := range []string{inOpenDir, writable} {
		_, err := Launch(testContext(t), Config{Path: path, Logger: testLogger(t)})
		if !errors.Is(err, ErrUnsafeBinary) || !strings.Contains(err.Error(), path) {
			t.Errorf("Launch(%s) = %v, want ErrUnsafeBinary naming it", path, err)
		}
	}
}
