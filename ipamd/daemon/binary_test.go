package daemon_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/sandboxipam/sandboxipam/internal/ipamdproc"
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
	path := filepath.Join(n.dir, "ipamd.yaml")
	if err := ipamdproc.WriteConfig(path, n.cfg); err != nil {
		n.t.Fatal(err)
	}
	return path
}

// process is one run of the real ipamd binary (ipamdproc), in its own
// process group so that SIGKILL takes its adapter plugin down with it.
type process struct {
	t    testing.TB
	proc *ipamdproc.Process
	log  string
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

// startBinary starts ipamd and waits until it serves: with a healthy
// adapter and ready for ADD when wantAdapter, else only until the CNI
// socket answers (the runtime is down or the store unproven on purpose).
func startBinary(t testing.TB, bin, cfgPath, logPath string, cni cniClient, intro *client.Client, wantAdapter bool) *process {
	t.Helper()
	proc, err := ipamdproc.Start(bin, cfgPath, logPath, nil)
	if err != nil {
		t.Fatal(err)
	}
	p := &process{t: t, proc: proc, log: logPath}
	t.Cleanup(p.reap)
	ctx, cancel := context.WithTimeout(context.Background(), testsupport.WaitDeadline)
	defer cancel()
	err = proc.WaitReady(ctx, "ipamd to serve with a healthy adapter", func(ctx context.Context) error {
		if _, err := cni.status(ctx); err != nil {
			return fmt.Errorf("CNI socket: %w", err)
		}
		if !wantAdapter {
			if _, err := intro.Pool(ctx); err != nil {
				return fmt.Errorf("introspection: %w", err)
			}
			return nil
		}
		a, err := intro.Adapter(ctx)
		if err != nil {
			return fmt.Errorf("introspection: %w", err)
		}
		if !a.Health.Healthy {
			return fmt.Errorf("adapter %+v\n%s", a.Health, p.logTail())
		}
		// Without a trusted checkpoint ipamd refuses ADD until the first
		// pass proves the pool: wait for exactly that, not for readiness,
		// which a full pool (as a test may leave it) also withholds.
		pool, err := intro.Pool(ctx)
		switch {
		case err != nil:
			return fmt.Errorf("introspection: %w", err)
		case pool.Proof.Unproven:
			_, why, _ := intro.Ready(ctx)
			return fmt.Errorf("the store is unproven: %s\n%s", why, p.logTail())
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// reap kills ipamd and its plugin, if still running, when the test ends.
func (p *process) reap() { _ = p.proc.Kill() }

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
	if err := p.proc.Stop(); err != nil {
		p.t.Fatalf("%v\n%s", err, p.logTail())
	}
	p.holdPort()
}

// logAbout returns every line of ipamd's log that mentions what.
func (p *process) logAbout(what string) string { return p.proc.LogAbout(what) }

func (p *process) logTail() string { return p.proc.LogTail(40) }
