package daemon_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/sandboxipam/sandboxipam/internal/testadapter"
	"github.com/sandboxipam/sandboxipam/internal/testsupport"
	"github.com/sandboxipam/sandboxipam/ipamd/config"
	"github.com/sandboxipam/sandboxipam/ipamd/daemon"
	"github.com/sandboxipam/sandboxipam/ipamd/introspect/client"
)

// runtime.adapter auto on a node where ipamd starts before the runtime (a
// common boot order outside Kubernetes): ipamd used to probe once, log NO
// RUNTIME ADAPTER and never probe again, so a first start stayed unproven,
// handing out nothing, until someone restarted it (issue 47). It now
// probes again with backoff, says what it tried and waits for, and
// proves the pool from the first listing once containerd answers.
func TestAutoProbesUntilARuntimeAnswers(t *testing.T) {
	n := newNode(t, "198.18.0.0/29")
	n.cfg.Runtime.Adapter = config.AdapterAuto
	n.cfg.Runtime.PluginDir = t.TempDir()
	spec, _ := config.LookupAdapter("containerd")
	if err := os.Symlink(testadapter.Build(t), filepath.Join(n.cfg.Runtime.PluginDir, spec.Binary)); err != nil {
		t.Fatal(err)
	}
	var containerdUp atomic.Bool
	var probes atomic.Int64
	probe := func(_ context.Context, socket string) bool {
		probes.Add(1)
		return containerdUp.Load() && socket == "/run/containerd/containerd.sock"
	}
	logger := slog.New(slog.NewTextHandler(testLogWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	d := daemon.New(n.cfg, daemon.Options{Logger: logger, Probe: probe})
	if err := d.Start(t.Context()); err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { _ = d.Stop(context.Background()) })
	intro := client.New(d.IntrospectionAddr().String(), nil)
	cni := cniClient{socket: n.cfg.Socket}

	testsupport.Wait(t, "auto to probe again: two rounds of five sockets", func() (bool, string) {
		return probes.Load() >= 10, fmt.Sprint(probes.Load(), " probes")
	})
	testsupport.Wait(t, "/readyz to say what auto tried and waits for", func() (bool, string) {
		r, err := intro.Readiness(t.Context())
		if err != nil {
			return false, err.Error()
		}
		why := strings.Join(r.Reasons, "; ")
		return !r.Ready && strings.Contains(why, "a container runtime to answer: runtime.adapter auto: no container runtime socket found (tried /run/containerd/containerd.sock, /run/crio/crio.sock, /var/run/cri-dockerd.sock, /var/run/dockershim.sock, /var/run/docker.sock); probing again in"), why
	})
	if _, err := cni.add(t.Context(), "too-early"); err == nil || !strings.Contains(err.Error(), "a container runtime to answer") {
		t.Fatalf("ADD before any runtime answered = %v; want refused naming the wait for a runtime", err)
	}

	containerdUp.Store(true)
	waitReady(t, cni)
	n.addSandbox("first")
	if ip, err := cni.add(t.Context(), "first"); err != nil || ip != "198.18.0.1/29" {
		t.Fatalf("ADD once containerd answered = %q, %v; want 198.18.0.1/29", ip, err)
	}
	a, err := intro.Adapter(t.Context())
	if err != nil || a.Name != "containerd" || a.Reason != "auto: /run/containerd/containerd.sock accepts connections (first of crictl's order)" {
		t.Fatalf("adapter view = %+v, %v; want containerd chosen by auto", a, err)
	}
}
