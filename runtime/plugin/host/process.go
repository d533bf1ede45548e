package host

import (
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/hashicorp/go-plugin/runner"
)

// errLaunchAborted: the launch's context ended before the process started.
var errLaunchAborted = errors.New("launch aborted")

// stderrTailSize bounds the stderr kept for launch error messages.
const stderrTailSize = 2048

// process runs one plugin binary for go-plugin (as its runner.Runner). We
// run it ourselves rather than through go-plugin's exec.Cmd path to: bind
// the start to the launch's context, have the kernel kill the plugin when
// the host dies (Pdeathsig on Linux), learn the moment the process exits
// without polling, and keep the tail of stderr for error messages.
type process struct {
	cmd    *exec.Cmd
	stdout io.ReadCloser
	stderr io.ReadCloser
	tmpDir string // go-plugin's socket directory: ours to remove if start fails
	tail   *tailBuffer

	mu      sync.Mutex
	pid     int
	aborted bool
	waitErr error

	exited chan struct{} // closed once the process is reaped
}

var _ runner.Runner = (*process)(nil)

// newProcess prepares cmd for go-plugin; spec carries the environment
// go-plugin sets up (magic cookie, protocol versions, socket directory,
// and with AutoMTLS the host's certificate, PLUGIN_CLIENT_CERT).
func newProcess(path string, args, extraEnv []string, spec *exec.Cmd, tmpDir string) (*process, error) {
	cmd := exec.Command(path, args...)
	// Host environment first, then the operator's extras, then go-plugin's
	// own variables, so that nothing overrides the handshake.
	cmd.Env = append(append(os.Environ(), extraEnv...), spec.Env...)
	cmd.SysProcAttr = dieWithHost()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	tail := &tailBuffer{max: stderrTailSize}
	return &process{
		cmd:    cmd,
		stdout: stdout,
		stderr: readCloser{Reader: io.TeeReader(stderr, tail), Closer: stderr},
		tmpDir: tmpDir,
		tail:   tail,
		exited: make(chan struct{}),
	}, nil
}

func (p *process) Start(context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.aborted {
		_ = os.RemoveAll(p.tmpDir)
		return errLaunchAborted
	}
	// Start from a fresh goroutine: it runs on a thread no goroutine is
	// locked to, and Go never ends such a thread, so the Pdeathsig the
	// kernel ties to the starting thread fires only when the host dies.
	started := make(chan error, 1)
	go func() { started <- p.cmd.Start() }()
	if err := <-started; err != nil {
		_ = os.RemoveAll(p.tmpDir)
		return err
	}
	p.pid = p.cmd.Process.Pid
	return nil
}

// Wait reaps the process; go-plugin calls it once, after stdout and stderr
// reach EOF.
func (p *process) Wait(context.Context) error {
	err := p.cmd.Wait()
	p.mu.Lock()
	p.waitErr = err
	p.mu.Unlock()
	close(p.exited)
	return err
}

// Kill sends SIGKILL; before the start, it makes the start fail instead.
func (p *process) Kill(context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd.Process == nil {
		p.aborted = true
		return nil
	}
	// The whole process group: a plugin that is a script, or that started
	// helpers, would otherwise leave them holding its stdout and stderr.
	// Once reaped, the group may be gone or (in theory) reused: kill only
	// while our process has not been waited for.
	if !p.hasExited() {
		_ = syscall.Kill(-p.pid, syscall.SIGKILL)
	}
	if err := p.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	return nil
}

func (p *process) ID() string {
	if pid := p.PID(); pid != 0 {
		return strconv.Itoa(pid)
	}
	return ""
}

// PID is the process ID, 0 before the start.
func (p *process) PID() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.pid
}

func (p *process) hasExited() bool {
	select {
	case <-p.exited:
		return true
	default:
		return false
	}
}

// exitStatus describes how the process ended, once it has.
func (p *process) exitStatus() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.waitErr == nil {
		return "exit status 0"
	}
	return p.waitErr.Error()
}

func (p *process) Diagnose(context.Context) string {
	if tail := p.tail.String(); tail != "" {
		return "stderr: " + tail
	}
	return ""
}

func (p *process) Stdout() io.ReadCloser { return p.stdout }
func (p *process) Stderr() io.ReadCloser { return p.stderr }
func (p *process) Name() string          { return p.cmd.Path }

// The plugin runs on this host: addresses need no translation.
func (p *process) PluginToHost(network, addr string) (string, string, error) {
	return network, addr, nil
}

func (p *process) HostToPlugin(network, addr string) (string, string, error) {
	return network, addr, nil
}

type readCloser struct {
	io.Reader
	io.Closer
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	max int
	mu  sync.Mutex
	buf []byte
}

func (t *tailBuffer) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, b...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(b), nil
}

// String returns the kept bytes on one line, for an error message.
func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var lines []string
	for _, line := range strings.Split(string(t.buf), "\n") {
		if line = strings.TrimSpace(line); line != "" {
			lines = append(lines, line)
		}
	}
	return strings.Join(lines, " | ")
}
