package e2e_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/sandboxipam/sandboxipam/ipamd/config"
	"github.com/sandboxipam/sandboxipam/ipamd/daemon"
)

// realIPAMD is the daemon serving network "podnet" from cidr.
type realIPAMD struct {
	Socket string
	Daemon *daemon.Daemon
}

// startIPAMD starts ipamd in-process with its socket and state in a fresh
// directory, introspection on a loopback port of the kernel's choosing,
// and no runtime adapter (ADD and DEL never need one).
func startIPAMD(tb testing.TB, cidr string, cooldown time.Duration) *realIPAMD {
	tb.Helper()
	return startIPAMDIn(tb, os.TempDir(), cidr, cooldown)
}

// startIPAMDIn keeps ipamd's socket and state in a new directory under
// parent.
func startIPAMDIn(tb testing.TB, parent, cidr string, cooldown time.Duration) *realIPAMD {
	tb.Helper()
	dir, err := os.MkdirTemp(parent, "sbxipamd")
	if err != nil {
		tb.Fatalf("temp dir: %v", err)
	}
	tb.Cleanup(func() { os.RemoveAll(dir) })
	cfg := config.DefaultConfig()
	cfg.Socket = filepath.Join(dir, "run", "ipamd.sock")
	cfg.StateDir = filepath.Join(dir, "state")
	cfg.Network = "podnet"
	cfg.Cooldown = cooldown
	cfg.IPSource.Static.CIDRs = []string{cidr}
	cfg.Introspection.Address = "127.0.0.1:0"
	cfg.Metrics.Address = ""
	if err := cfg.Validate(); err != nil {
		tb.Fatalf("ipamd config: %v", err)
	}
	noRuntime := func(context.Context, string) bool { return false }
	d := daemon.New(cfg, daemon.Options{Probe: noRuntime})
	if err := d.Start(context.Background()); err != nil {
		tb.Fatalf("start ipamd: %v", err)
	}
	tb.Cleanup(func() { stopIPAMD(tb, d) })
	return &realIPAMD{Socket: cfg.Socket, Daemon: d}
}

func stopIPAMD(tb testing.TB, d *daemon.Daemon) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := d.Stop(ctx); err != nil {
		tb.Errorf("stop ipamd: %v", err)
	}
}
