package e2e_test

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/sandboxipam/sandboxipam/internal/ipamdproc"
	"github.com/sandboxipam/sandboxipam/internal/testsupport"
)

// startIPAMDProcess runs the real ipamd binary, as a node does, over cidr
// and returns its socket once /readyz says the fresh pool is proven. The
// benchmarks use it so that ipamd's work and the benchmark's own (timing,
// exec'ing plugins) are separate processes, as on a node.
func startIPAMDProcess(tb testing.TB, parent, cidr string, cooldown time.Duration) string {
	tb.Helper()
	cfg := ipamdConfig(tb, parent, cooldown, cidr)
	port := testsupport.ReservePort(tb)
	cfg.Introspection.Address = port.Addr
	dir := filepath.Dir(cfg.StateDir)
	cfgPath := filepath.Join(dir, "ipamd.yaml")
	if err := ipamdproc.WriteConfig(cfgPath, cfg); err != nil {
		tb.Fatal(err)
	}
	proc, err := ipamdproc.Start(testsupport.Binary(tb, "./cmd/ipamd"), cfgPath, filepath.Join(dir, "ipamd.log"), port)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = proc.Stop() })
	// A hung listener must not outlast the wait's deadline.
	client := &http.Client{Timeout: 10 * time.Second}
	ctx, cancel := context.WithTimeout(context.Background(), testsupport.WaitDeadline)
	defer cancel()
	err = proc.WaitReady(ctx, "ipamd to be ready", func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+port.Addr+"/readyz", nil)
		if err != nil {
			return err
		}
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("/readyz: %s", resp.Status)
		}
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	return cfg.Socket
}
