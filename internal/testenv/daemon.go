package testenv

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/sandboxipam/sandboxipam/internal/testsupport"
)

// ErrDaemonStart: a daemon exited or did not answer in time. The error
// carries the tail of its log.
var ErrDaemonStart = errors.New("daemon did not start")

const (
	// startTimeout bounds a start when the caller's ctx has no deadline.
	startTimeout = 60 * time.Second
	// stopGrace is how long a daemon gets after SIGTERM before SIGKILL.
	stopGrace = 10 * time.Second
	// logTailBytes is how much of a daemon's log a start error quotes.
	logTailBytes = 4000
)

// daemon is a started daemon process whose output goes to a log file.
type daemon struct {
	name    string
	cmd     *exec.Cmd
	logPath string
	exited  chan struct{} // closed when the process has been waited for
	logger  *slog.Logger
}

// startDaemon runs argv in the background with stdout and stderr appended
// to logPath. The process is not bound to ctx: it outlives the start call
// and is ended by stopDaemon.
func startDaemon(name, logPath string, logger *slog.Logger, argv ...string) (*daemon, error) {
	logFile, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("start %s: log file: %w", name, err)
	}
	defer logFile.Close()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	// Its own process group, so a ^C meant for the test does not reach it
	// before the test's clean-up does.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	d := &daemon{name: name, cmd: cmd, logPath: logPath, exited: make(chan struct{}), logger: logger}
	go func() {
		_ = cmd.Wait()
		close(d.exited)
	}()
	logger.Info("daemon started", "daemon", name, "pid", cmd.Process.Pid, "log", logPath)
	return d, nil
}

// pid is the daemon's process ID.
func (d *daemon) pid() int { return d.cmd.Process.Pid }

// waitReady polls ready until it succeeds, the daemon exits, or ctx ends.
// The error quotes the daemon's log.
func (d *daemon) waitReady(ctx context.Context, ready func(ctx context.Context) error) error {
	ctx, cancel := withDefaultTimeout(ctx, startTimeout)
	defer cancel()
	err := testsupport.Poll(ctx, d.name+" answering", func(ctx context.Context) error {
		select {
		case <-d.exited:
			return fmt.Errorf("%w: %s exited (%v)", testsupport.ErrGiveUp, d.name, d.cmd.ProcessState)
		default:
		}
		return ready(ctx)
	})
	if err != nil {
		return fmt.Errorf("%w: %w; log %s:\n%s", ErrDaemonStart, err, d.logPath, d.logTail())
	}
	return nil
}

func (d *daemon) logTail() string {
	b, err := os.ReadFile(d.logPath)
	if err != nil {
		return fmt.Sprintf("(log unreadable: %v)", err)
	}
	return strings.TrimSpace(string(tail(b, logTailBytes)))
}

// stop sends SIGTERM, waits up to stopGrace (or ctx), then SIGKILLs.
func (d *daemon) stop(ctx context.Context) error {
	select {
	case <-d.exited:
		return nil
	default:
	}
	if err := d.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("stop %s: %w", d.name, err)
	}
	timer := time.NewTimer(stopGrace)
	defer timer.Stop()
	select {
	case <-d.exited:
		return nil
	case <-ctx.Done():
	case <-timer.C:
	}
	d.logger.Warn("daemon ignored SIGTERM, killing it", "daemon", d.name, "pid", d.pid())
	_ = d.cmd.Process.Kill()
	<-d.exited
	return nil
}

// withDefaultTimeout bounds ctx by timeout unless it already has a deadline.
func withDefaultTimeout(ctx context.Context, timeout time.Duration) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, timeout)
}

// runCommand runs a short helper command and returns its error with its
// output.
func runCommand(ctx context.Context, argv ...string) error {
	out, err := exec.CommandContext(ctx, argv[0], argv[1:]...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s: %w: %s", strings.Join(argv, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// dialUnix checks that something accepts connections on a unix socket.
func dialUnix(ctx context.Context, path string) error {
	var dialer net.Dialer
	conn, err := dialer.DialContext(ctx, "unix", path)
	if err != nil {
		return err
	}
	return conn.Close()
}

// loggerOrDiscard is used when the caller passes no logger.
func loggerOrDiscard(logger *slog.Logger) *slog.Logger {
	if logger != nil {
		return logger
	}
	return slog.New(slog.DiscardHandler)
}
