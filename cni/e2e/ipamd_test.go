package e2e_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/sandboxipam/sandboxipam/internal/testadapter"
	"github.com/sandboxipam/sandboxipam/internal/testsupport"
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
// and the file-backed test adapter over a runtime with no pod.
func startIPAMD(tb testing.TB, cidr string, cooldown time.Duration) *realIPAMD {
	tb.Helper()
	return startIPAMDIn(tb, os.TempDir(), cidr, cooldown)
}

// startIPAMDIn keeps ipamd's socket and state in a new directory under
// parent.
func startIPAMDIn(tb testing.TB, parent, cidr string, cooldown time.Duration) *realIPAMD {
	tb.Helper()
	return startIPAMDWith(tb, parent, cooldown, cidr)
}

// startIPAMDWith starts ipamd over the static cidrs (both families make a
// dual-stack pool).
func startIPAMDWith(tb testing.TB, parent string, cooldown time.Duration, cidrs ...string) *realIPAMD {
	tb.Helper()
	return startIPAMDConfig(tb, ipamdConfig(tb, parent, cooldown, cidrs...))
}

// startIPAMDConfig starts ipamd with cfg (from ipamdConfig, changed).
func startIPAMDConfig(tb testing.TB, cfg config.Config) *realIPAMD {
	tb.Helper()
	d := daemon.New(cfg, daemon.Options{})
	if err := d.Start(context.Background()); err != nil {
		tb.Fatalf("start ipamd: %v", err)
	}
	tb.Cleanup(func() { stopIPAMD(tb, d) })
	// Wait for the answer an ADD needs (the one STATUS and /readyz give),
	// not for a part of it such as the store's proof.
	testsupport.Wait(tb, "ipamd to hand out addresses", func() (bool, string) {
		r := d.Store().Readiness()
		return r.Ready(), fmt.Sprint(r.Reasons)
	})
	return &realIPAMD{Socket: cfg.Socket, Daemon: d}
}

// ipamdConfig is a fresh node's config under a new directory in parent,
// with the test adapter reporting a runtime that has no pod yet.
func ipamdConfig(tb testing.TB, parent string, cooldown time.Duration, cidrs ...string) config.Config {
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
	cfg.IPSource.Type = config.SourceStatic
	cfg.IPSource.Static.CIDRs = cidrs
	cfg.Introspection.Address = "127.0.0.1:0"
	cfg.Metrics.Address = ""
	// A runtime with no pod yet: its first listing proves the fresh node's
	// pool (without a checkpoint ipamd hands out nothing before that).
	state := filepath.Join(dir, "runtime.json")
	if err := testadapter.WriteState(state, testadapter.State{RuntimeName: "fake-runtime"}); err != nil {
		tb.Fatal(err)
	}
	cfg.Runtime.Adapter = testadapter.Build(tb)
	cfg.Runtime.Args = []string{"--state=" + state}
	cfg.Runtime.AutoMTLS = false
	cfg.Advanced.Adapter.StartTimeout = time.Minute
	if err := cfg.Validate(); err != nil {
		tb.Fatalf("ipamd config: %v", err)
	}
	return cfg
}

func stopIPAMD(tb testing.TB, d *daemon.Daemon) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := d.Stop(ctx); err != nil {
		tb.Errorf("stop ipamd: %v", err)
	}
}
