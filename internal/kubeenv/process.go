package kubeenv

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"
)

// stopGrace is how long a component has to exit after SIGTERM before it
// gets SIGKILL.
const stopGrace = 20 * time.Second

// Process is one running component, in a process group of its own, its
// output in LogPath.
type Process struct {
	Name    string
	LogPath string

	// logStart is where this run's output begins in LogPath, which an
	// earlier run of the same component may have written before.
	logStart int64
	cmd      *exec.Cmd
	exited   chan struct{}
	stopOnce sync.Once
}

// startProcess starts argv, inside the network namespace at netns unless
// it is "", with its output appended to dir/<name>.log (a component
// started again writes after its predecessor).
func startProcess(dir, netns, name string, argv ...string) (*Process, error) {
	p := &Process{Name: name, LogPath: filepath.Join(dir, name+".log"), exited: make(chan struct{})}
	log, err := os.OpenFile(p.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	if st, err := log.Stat(); err == nil {
		p.logStart = st.Size()
	}
	if netns != "" {
		argv = append([]string{"nsenter", "--net=" + netns, "--"}, argv...)
	}
	p.cmd = exec.Command(argv[0], argv[1:]...)
	p.cmd.Stdout, p.cmd.Stderr = log, log
	// Pdeathsig: a component never outlives a test binary that died
	// without its cleanups.
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := p.cmd.Start(); err != nil {
		log.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	go func() { _ = p.cmd.Wait(); log.Close(); close(p.exited) }()
	return p, nil
}

// Stop sends the process group SIGTERM, then SIGKILL after 20 s, and
// waits until the component has exited. Calling it again does nothing.
func (p *Process) Stop() {
	p.stopOnce.Do(func() {
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-p.exited:
		case <-time.After(stopGrace):
			_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
			<-p.exited
		}
	})
}

// Exited is closed once the component has exited.
func (p *Process) Exited() <-chan struct{} { return p.exited }

// Alive returns an error naming the component and its log when it has
// exited, nil while it runs.
func (p *Process) Alive() error {
	select {
	case <-p.exited:
		return fmt.Errorf("%s exited: %v (log %s)", p.Name, p.cmd.ProcessState, p.LogPath)
	default:
		return nil
	}
}

// LogTail is the last n bytes this run of the component wrote to its log.
func (p *Process) LogTail(n int) []byte {
	b, err := os.ReadFile(p.LogPath)
	if err != nil {
		return []byte(err.Error())
	}
	b = b[min(p.logStart, int64(len(b))):]
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return b
}
