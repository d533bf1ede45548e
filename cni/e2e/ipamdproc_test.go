package e2e_test

import (
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

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
	port.Release()
	cfg.Introspection.Address = port.Addr
	data, err := yaml.Marshal(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	dir := filepath.Dir(cfg.StateDir)
	cfgPath := filepath.Join(dir, "ipamd.yaml")
	if err := os.WriteFile(cfgPath, data, 0o600); err != nil {
		tb.Fatal(err)
	}
	logFile, err := os.Create(filepath.Join(dir, "ipamd.log"))
	if err != nil {
		tb.Fatal(err)
	}
	cmd := exec.Command(testsupport.Binary(tb, "./cmd/ipamd"), "--config", cfgPath)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		tb.Fatalf("start ipamd: %v", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait(); logFile.Close() }()
	tb.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		<-exited
	})
	// A hung listener must not outlast Wait's deadline.
	client := &http.Client{Timeout: 10 * time.Second}
	testsupport.Wait(tb, "ipamd to be ready", func() (bool, string) {
		select {
		case err := <-exited:
			exited <- err
			log, _ := os.ReadFile(logFile.Name())
			tb.Fatalf("ipamd exited: %v\n%s", err, log)
		default:
		}
		resp, err := client.Get("http://" + port.Addr + "/readyz")
		if err != nil {
			return false, err.Error()
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, resp.Status
	})
	return cfg.Socket
}
