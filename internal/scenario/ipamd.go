package scenario

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/sandboxipam/sandboxipam/internal/ipamdproc"
	"github.com/sandboxipam/sandboxipam/internal/testsupport"
	"github.com/sandboxipam/sandboxipam/ipamd/config"
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

	// port is Addr, held by this process whenever ipamd is not running,
	// so a restart finds it free.
	port *testsupport.Port
	proc *ipamdproc.Process
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

// NewIPAMD writes ipamd's config under cfg.Dir and reserves its
// introspection port. Start launches it; Close lets the port go.
func NewIPAMD(cfg IPAMDConfig) (*IPAMD, error) {
	port, err := testsupport.ListenPort()
	if err != nil {
		return nil, err
	}
	d := &IPAMD{
		Binary:     filepath.Join(cfg.BinDir, "ipamd"),
		Ctl:        filepath.Join(cfg.BinDir, "ipamctl"),
		ConfigPath: filepath.Join(cfg.Dir, "ipamd.yaml"),
		Socket:     IPAMDSocket(cfg.Dir),
		Addr:       port.Addr,
		LogPath:    filepath.Join(cfg.Dir, "ipamd.log"),
		port:       port,
	}
	if err := ipamdproc.WriteConfig(d.ConfigPath, d.config(cfg)); err != nil {
		port.Release()
		return nil, err
	}
	return d, nil
}

// config is ipamd's config for cfg.
func (d *IPAMD) config(cfg IPAMDConfig) config.Config {
	c := config.DefaultConfig()
	c.Socket = d.Socket
	c.StateDir = filepath.Join(cfg.Dir, "state")
	c.Network = "sandboxipam"
	c.Cooldown = cfg.Cooldown
	// healthInterval is also the health ping's timeout: a short one on a
	// busy machine declares a healthy adapter dead and relaunches it over
	// and over. A dead adapter is noticed by its exit, not by the ping.
	c.Reconcile.Interval = max(cfg.Grace/3, 200*time.Millisecond)
	c.Reconcile.Grace = cfg.Grace
	c.Runtime.Adapter = cfg.Adapter
	c.Runtime.Endpoint = cfg.Endpoint
	c.Runtime.PluginDir = filepath.Join(cfg.BinDir, "adapters")
	c.IPSource.Type = config.SourceStatic
	c.IPSource.Static.CIDRs = []string{cfg.CIDR}
	c.Introspection.Address = d.Addr
	c.Metrics.Address = ""
	c.Log.Level = "debug"
	c.Advanced.Adapter.MinBackoff = 100 * time.Millisecond
	c.Advanced.Adapter.MaxBackoff = time.Second
	c.Advanced.Adapter.HealthInterval = 10 * time.Second
	c.Advanced.Reconcile.ListTimeout = 5 * time.Second
	return c
}

// Client talks to ipamd's introspection API.
func (d *IPAMD) Client() *client.Client { return client.New(d.Addr, nil) }

// Start launches ipamd and waits until it serves its socket, its adapter
// is healthy and a first reconcile pass has run.
func (d *IPAMD) Start(ctx context.Context) error {
	proc, err := ipamdproc.Start(d.Binary, d.ConfigPath, d.LogPath, d.port)
	if err != nil {
		return err
	}
	d.proc = proc
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
	return d.proc.WaitReady(ctx, "ipamd ready", func(ctx context.Context) error {
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
// closed connection on its own). Nothing is flushed. The introspection
// port stays reserved for the next Start.
func (d *IPAMD) Kill() error {
	if d.proc == nil {
		return nil
	}
	err := d.proc.Kill()
	d.proc = nil
	return err
}

// Close kills ipamd, if running, and lets its introspection port go.
func (d *IPAMD) Close() error {
	err := d.Kill()
	d.port.Release()
	return err
}

// Running reports whether the process is alive.
func (d *IPAMD) Running() bool { return d.proc != nil && !d.proc.Exited() }

// PID is the running ipamd's process ID, 0 when it is not running.
func (d *IPAMD) PID() int {
	if d.proc == nil {
		return 0
	}
	return d.proc.PID()
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

// IPAMDSocket is where an ipamd configured with dir as its Dir serves.
func IPAMDSocket(dir string) string { return filepath.Join(dir, "run", "ipamd.sock") }
