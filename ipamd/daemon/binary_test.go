package daemon_test

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/sandboxipam/sandboxipam/ipamd/ctl"
)

// ipamdBinary is the real ipamd, built once per test binary.
var ipamdBinary struct {
	once sync.Once
	path string
	err  error
}

// buildIpamd compiles cmd/ipamd into a temporary directory.
func buildIpamd(t testing.TB) string {
	t.Helper()
	ipamdBinary.once.Do(func() {
		dir, err := os.MkdirTemp("", "ipamd-bin")
		if err != nil {
			ipamdBinary.err = err
			return
		}
		ipamdBinary.path = filepath.Join(dir, "ipamd")
		cmd := exec.Command("go", "build", "-tags", "grpcnotrace", "-o", ipamdBinary.path, "./cmd/ipamd")
		cmd.Dir = moduleRoot(t)
		if out, err := cmd.CombinedOutput(); err != nil {
			ipamdBinary.err = fmt.Errorf("go build ./cmd/ipamd: %w\n%s", err, out)
		}
	})
	if ipamdBinary.err != nil {
		t.Fatal(ipamdBinary.err)
	}
	return ipamdBinary.path
}

func moduleRoot(t testing.TB) string {
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("go.mod not found above the test's directory")
		}
		dir = parent
	}
}

// freeLoopbackAddr picks a port for the introspection listener that stays
// the same across restarts of one node.
func freeLoopbackAddr(t testing.TB) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
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
}

// startBinary runs ipamd --config and waits until the CNI socket answers
// Status and the adapter is healthy.
func startBinary(t testing.TB, bin, cfgPath, logPath string, cni cniClient, intro *ctl.Client) *process {
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
	t.Cleanup(p.kill)
	deadline := time.Now().Add(30 * time.Second)
	for {
		select {
		case err := <-p.waited:
			p.waited <- err
			t.Fatalf("ipamd exited during start-up: %v\n%s", err, p.logTail())
		default:
		}
		if _, err := cni.status(context.Background()); err == nil {
			if a, err := intro.Adapter(context.Background()); err == nil && a.Health.Healthy {
				return p
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("ipamd not ready after 30s\n%s", p.logTail())
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// kill sends SIGKILL to ipamd and its plugin and reaps ipamd.
func (p *process) kill() {
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	err := <-p.waited
	p.waited <- err
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
}

func (p *process) logTail() string {
	data, _ := os.ReadFile(p.log)
	lines := strings.Split(string(bytes.TrimRight(data, "\n")), "\n")
	return strings.Join(lines[max(0, len(lines)-40):], "\n")
}
