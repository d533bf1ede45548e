package daemon_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/sandboxipam/sandboxipam/internal/testsupport"
	"github.com/sandboxipam/sandboxipam/ipamd/introspect/client"
)

// buildIpamd compiles cmd/ipamd once per test process, with the
// Makefile's flags.
func buildIpamd(t testing.TB) string {
	t.Helper()
	return testsupport.Binary(t, "./cmd/ipamd")
}

// reserveIntrospection gives the node a loopback introspection port that
// stays the same across restarts and that the test holds while ipamd is
// down, so nothing else can take it between runs.
func (n *node) reserveIntrospection() *testsupport.Port {
	n.t.Helper()
	port := testsupport.ReservePort(n.t)
	n.cfg.Introspection.Address = port.Addr
	return port
}

// freeLoopbackAddr picks a loopback port for the introspection listener
// and lets it go at once. Prefer reserveIntrospection and startOnPort,
// which hold the port whenever ipamd does not.
func freeLoopbackAddr(t testing.TB) string {
	t.Helper()
	port := testsupport.ReservePort(t)
	port.Release()
	return port.Addr
}

// writeConfig writes the node's config as the YAML file ipamd --config reads.
func (n *node) writeConfig() string {
	n.t.Helper()
	data, err := yaml.Marshal(n.cfg)
	if err != nil {
		n.t.Fatal(err)
	}
	path := filepath.Join(n.dir, "ipamd.yaml")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		n.t.Fatal(err)
	}
	return path
}

// process is one run of the real ipamd binary, in its own process group
// so that SIGKILL takes its adapter plugin down with it.
type process struct {
	t      testing.TB
	cmd    *exec.Cmd
	log    string
	waited chan error
	// port, when set, is the introspection port: held again by the test
	// once this ipamd has exited.
	port *testsupport.Port
}

// startOnPort is startBinary for a node whose introspection port the test
// holds: it lets the port go just before ipamd starts, and takes it back
// when this run of ipamd is killed or stopped.
func startOnPort(t testing.TB, port *testsupport.Port, bin, cfgPath, logPath string, cni cniClient, intro *client.Client) *process {
	t.Helper()
	port.Release()
	p := startBinary(t, bin, cfgPath, logPath, cni, intro, true)
	p.port = port
	return p
}

// startBinary runs ipamd --config and waits until the CNI socket answers
// Status and the adapter is healthy.
// startBinary starts ipamd and waits until it serves: with a healthy
// adapter and ready for ADD when wantAdapter, else only until the CNI
// socket answers (the runtime is down or the store unproven on purpose).
func startBinary(t testing.TB, bin, cfgPath, logPath string, cni cniClient, intro *client.Client, wantAdapter bool) *process {
	t.Helper()
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	fmt.Fprintf(logFile, "---- start %s\n", time.Now().Format(time.RFC3339Nano))
	cmd := exec.Command(bin, "--config", cfgPath)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start ipamd: %v", err)
	}
	p := &process{t: t, cmd: cmd, log: logPath, waited: make(chan error, 1)}
	go func() { p.waited <- cmd.Wait() }()
	t.Cleanup(p.reap)
	testsupport.Wait(t, "ipamd to serve with a healthy adapter", func() (bool, string) {
		select {
		case err := <-p.waited:
			p.waited <- err
			t.Fatalf("ipamd exited during start-up: %v\n%s", err, p.logTail())
		default:
		}
		if _, err := cni.status(t.Context()); err != nil {
			return false, "CNI socket: " + err.Error()
		}
		if !wantAdapter {
			_, err := intro.Pool(t.Context())
			return err == nil, fmt.Sprintf("introspection: %v", err)
		}
		a, err := intro.Adapter(t.Context())
		if err != nil {
			return false, "introspection: " + err.Error()
		}
		if !a.Health.Healthy {
			return false, fmt.Sprintf("adapter %+v\n%s", a.Health, p.logTail())
		}
		// Without a trusted checkpoint ipamd refuses ADD until the first
		// pass proves the pool: ready says when.
		ready, why, err := intro.Ready(t.Context())
		if err != nil {
			return false, "readyz: " + err.Error()
		}
		return ready, "readyz: " + why + "\n" + p.logTail()
	})
	return p
}

// reap kills ipamd and its plugin, if still running, when the test ends.
func (p *process) reap() {
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	err := <-p.waited
	p.waited <- err
}

// kill sends SIGKILL to ipamd and its plugin and reaps ipamd.
func (p *process) kill() {
	p.t.Helper()
	p.reap()
	p.holdPort()
}

// holdPort takes the introspection port back once ipamd has exited.
func (p *process) holdPort() {
	p.t.Helper()
	if p.port == nil {
		return
	}
	if err := p.port.Hold(); err != nil {
		p.t.Fatalf("after ipamd exited: %v", err)
	}
}

// stop sends SIGTERM and requires a clean exit.
func (p *process) stop() {
	p.t.Helper()
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	err := <-p.waited
	p.waited <- err
	if err != nil {
		p.t.Fatalf("ipamd exit after SIGTERM: %v\n%s", err, p.logTail())
	}
	p.holdPort()
}

// logAbout returns every line of ipamd's log that mentions what.
func (p *process) logAbout(what string) string {
	data, _ := os.ReadFile(p.log)
	var out []string
	for _, line := range strings.Split(string(data), "\n") {
		if strings.Contains(line, what) || strings.HasPrefix(line, "---- start") {
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}

func (p *process) logTail() string {
	data, _ := os.ReadFile(p.log)
	lines := strings.Split(string(bytes.TrimRight(data, "\n")), "\n")
	return strings.Join(lines[max(0, len(lines)-40):], "\n")
}
