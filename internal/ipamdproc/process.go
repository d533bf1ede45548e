package ipamdproc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/sandboxipam/sandboxipam/internal/testsupport"
	"github.com/sandboxipam/sandboxipam/ipamd/config"
)

// ErrExited: ipamd exited while the test waited for it to become ready.
var ErrExited = errors.New("ipamd exited")

// WriteConfig writes cfg to path as the YAML file ipamd --config reads,
// creating path's directory. cfg must pass Validate: a config ipamd would
// refuse fails here, naming the field, rather than as an exit at start.
func WriteConfig(path string, cfg config.Config) error {
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("ipamd config %s: %w", path, err)
	}
	data, err := yaml.Marshal(cfg)
	if err != nil {
		return fmt.Errorf("ipamd config %s: %w", path, err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("ipamd config: %w", err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		return fmt.Errorf("ipamd config: %w", err)
	}
	return nil
}

// Process is one run of the ipamd binary.
type Process struct {
	// LogPath is the file ipamd's output is appended to.
	LogPath string

	cmd  *exec.Cmd
	done chan struct{}
	err  error // Wait's result, once done is closed
	port *testsupport.Port
}

// Start runs bin --config cfgPath in its own process group, its output
// appended to logPath after a "---- start <time>" line. port, when not
// nil, is the introspection port the test holds: Start lets it go just
// before the exec, and Kill and Stop take it back once ipamd has exited,
// so nothing else takes it between two runs.
func Start(bin, cfgPath, logPath string, port *testsupport.Port) (*Process, error) {
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("ipamd log: %w", err)
	}
	defer logFile.Close()
	fmt.Fprintf(logFile, "---- start %s\n", time.Now().Format(time.RFC3339Nano))
	cmd := exec.Command(bin, "--config", cfgPath)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	// Its own process group, so a SIGKILL of the test's process tree
	// does not depend on ours; Kill ends the adapter plugin too.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if port != nil {
		port.Release()
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start ipamd %s: %w", bin, err)
	}
	p := &Process{LogPath: logPath, cmd: cmd, done: make(chan struct{}), port: port}
	go func() { p.err = cmd.Wait(); close(p.done) }()
	return p, nil
}

// PID is ipamd's process ID.
func (p *Process) PID() int { return p.cmd.Process.Pid }

// Exited reports whether ipamd has exited.
func (p *Process) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// WaitReady polls ready (testsupport.Poll) until it returns nil, and
// gives up at once, with ErrExited, the exit status and the log's tail,
// when ipamd exits first.
func (p *Process) WaitReady(ctx context.Context, what string, ready func(ctx context.Context) error) error {
	return testsupport.Poll(ctx, what, func(ctx context.Context) error {
		if p.Exited() {
			return fmt.Errorf("%w: %w: %w (%v)\n%s", testsupport.ErrGiveUp, ErrExited, p.err, p.cmd.ProcessState, p.LogTail(40))
		}
		return ready(ctx)
	})
}

// Kill ends ipamd and its plugin with SIGKILL, as a crash or an OOM kill
// would: nothing is flushed. It reaps ipamd and takes the port back.
func (p *Process) Kill() error {
	_ = syscall.Kill(-p.PID(), syscall.SIGKILL)
	<-p.done
	return p.hold()
}

// Stop sends ipamd SIGTERM and returns its exit error (nil for a clean
// exit); whatever of its process group is left then is killed, and the
// port taken back.
func (p *Process) Stop() error {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	<-p.done
	_ = syscall.Kill(-p.PID(), syscall.SIGKILL)
	if err := p.hold(); err != nil {
		return err
	}
	if p.err != nil {
		return fmt.Errorf("ipamd exit after SIGTERM: %w", p.err)
	}
	return nil
}

func (p *Process) hold() error {
	if p.port == nil {
		return nil
	}
	if err := p.port.Hold(); err != nil {
		return fmt.Errorf("after ipamd exited: %w", err)
	}
	return nil
}

// LogTail returns the last n lines of ipamd's log.
func (p *Process) LogTail(n int) string {
	data, _ := os.ReadFile(p.LogPath)
	lines := strings.Split(string(bytes.TrimRight(data, "\n")), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// LogAbout returns every line of ipamd's log that mentions what, with
// the line each run of ipamd starts with.
func (p *Process) LogAbout(what string) string {
	data, _ := os.ReadFile(p.LogPath)
	var out []string
	for line := range strings.Lines(string(data)) {
		line = strings.TrimSuffix(line, "\n")
		if strings.Contains(line, what) || strings.HasPrefix(line, "---- start") {
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}
