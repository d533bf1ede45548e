package scenario

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/sandboxipam/sandboxipam/internal/testsupport"
	"github.com/sandboxipam/sandboxipam/ipamd/introspect/client"
)

// IPAMD is one ipamd process started from its binary, as an operator runs
// it: a config file, a unix socket, an introspection address.
type IPAMD struct {
	Binary     string // the ipamd binary
	Ctl        string // the ipamctl binary
	ConfigPath string
	Socket     string
	Addr       string // introspection host:port
	LogPath    string

	cmd    *exec.Cmd
	exited chan struct{}
}

// IPAMDConfig is what the scenario varies in ipamd's config.
type IPAMDConfig struct {
	Dir      string        // state, socket and log live here
	BinDir   string        // ipamd, ipamctl and adapters/ live here
	Adapter  string        // docker, containerd, ...
	Endpoint string        // the runtime socket URI
	CIDR     string        // the static pool
	Grace    time.Duration // reconcile grace; the interval is a third of it
	Cooldown time.Duration
}

// NewIPAMD writes ipamd's config under cfg.Dir. Start launches it.
func NewIPAMD(cfg IPAMDConfig) (*IPAMD, error) {
	addr, err := freeLoopbackAddr()
	if err != nil {
		return nil, err
	}
	d := &IPAMD{
		Binary:     filepath.Join(cfg.BinDir, "ipamd"),
		Ctl:        filepath.Join(cfg.BinDir, "ipamctl"),
		ConfigPath: filepath.Join(cfg.Dir, "ipamd.yaml"),
		Socket:     IPAMDSocket(cfg.Dir),
		Addr:       addr,
		LogPath:    filepath.Join(cfg.Dir, "ipamd.log"),
	}
	// healthInterval is also the health ping's timeout: a short one on a
	// busy machine declares a healthy adapter dead and relaunches it over
	// and over. A dead adapter is noticed by its exit, not by the ping.
	interval := cfg.Grace / 3
	if interval < 200*time.Millisecond {
		interval = 200 * time.Millisecond
	}
	yaml := fmt.Sprintf(`socket: %s
stateDir: %s
network: sandboxipam
cooldown: %s
reconcile:
  interval: %s
  grace: %s
runtime:
  adapter: %s
  endpoint: %s
  pluginDir: %s
ipSource:
  type: static
  static:
    cidrs: [%s]
introspection:
  address: %s
metrics:
  address: ""
log:
  level: debug
advanced:
  adapter:
    minBackoff: 100ms
    maxBackoff: 1s
    healthInterval: 10s
  reconcile:
    listTimeout: 5s
`, d.Socket, filepath.Join(cfg.Dir, "state"), cfg.Cooldown, interval, cfg.Grace,
		cfg.Adapter, cfg.Endpoint, filepath.Join(cfg.BinDir, "adapters"), cfg.CIDR, addr)
	if err := os.MkdirAll(cfg.Dir, 0o700); err != nil {
		return nil, err
	}
	if err := os.WriteFile(d.ConfigPath, []byte(yaml), 0o600); err != nil {
		return nil, fmt.Errorf("write ipamd config: %w", err)
	}
	return d, nil
}

// Client talks to ipamd's introspection API.
func (d *IPAMD) Client() *client.Client { return client.New(d.Addr, nil) }

// Start launches ipamd and waits until it serves its socket, its adapter
// is healthy and a first reconcile pass has run.
func (d *IPAMD) Start(ctx context.Context) error {
	logFile, err := os.OpenFile(d.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer logFile.Close()
	cmd := exec.Command(d.Binary, "--config", d.ConfigPath)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	// Its own process group, so a SIGKILL of the test's process tree
	// does not depend on ours; Kill ends the adapter plugin too.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start ipamd: %w", err)
	}
	d.cmd, d.exited = cmd, make(chan struct{})
	go func() { _ = cmd.Wait(); close(d.exited) }()
	if err := d.waitReady(ctx); err != nil {
		_ = d.Kill()
		return fmt.Errorf("ipamd did not become ready (log %s): %w", d.LogPath, err)
	}
	return nil
}

func (d *IPAMD) waitReady(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	c := d.Client()
	return testsupport.Poll(ctx, "ipamd ready", func(ctx context.Context) error {
		select {
		case <-d.exited:
			return fmt.Errorf("%w: ipamd exited: %s", testsupport.ErrGiveUp, d.cmd.ProcessState)
		default:
		}
		a, err := c.Adapter(ctx)
		switch {
		case err != nil:
			return err
		case !a.Health.Healthy:
			return fmt.Errorf("adapter %s: %s", a.Health.State, a.Health.LastError)
		case a.Last == nil:
			return errors.New("no reconcile pass yet")
		}
		_, err = os.Stat(d.Socket)
		return err
	})
}

// Kill ends ipamd with SIGKILL, as a crash or an OOM kill would, and its
// adapter plugin with it (go-plugin's child would otherwise notice the
// closed connection on its own). Nothing is flushed.
func (d *IPAMD) Kill() error {
	if d.cmd == nil {
		return nil
	}
	_ = syscall.Kill(-d.cmd.Process.Pid, syscall.SIGKILL)
	<-d.exited
	d.cmd = nil
	return nil
}

// Running reports whether the process is alive.
func (d *IPAMD) Running() bool {
	if d.cmd == nil {
		return false
	}
	select {
	case <-d.exited:
		return false
	default:
		return true
	}
}

// PID is the running ipamd's process ID, 0 when it is not running.
func (d *IPAMD) PID() int {
	if d.cmd == nil {
		return 0
	}
	return d.cmd.Process.Pid
}

// RunCtl runs ipamctl against this ipamd and returns what it printed.
func (d *IPAMD) RunCtl(ctx context.Context, args ...string) (string, error) {
	argv := append([]string{"--addr", d.Addr, "--admin-socket", filepath.Join(filepath.Dir(d.Socket), "admin.sock")}, args...)
	out, err := exec.CommandContext(ctx, d.Ctl, argv...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("ipamctl %v: %w: %s", args, err, out)
	}
	return string(out), nil
}

func freeLoopbackAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("pick an introspection port: %w", err)
	}
	defer l.Close()
	return "127.0.0.1:" + strconv.Itoa(l.Addr().(*net.TCPAddr).Port), nil
}

// IPAMDSocket is where an ipamd configured with dir as its Dir serves.
func IPAMDSocket(dir string) string { return filepath.Join(dir, "run", "ipamd.sock") }
