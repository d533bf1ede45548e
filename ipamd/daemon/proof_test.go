package daemon_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sandboxipam/sandboxipam/internal/testsupport"
	"github.com/sandboxipam/sandboxipam/ipamd/api/wire"
	"github.com/sandboxipam/sandboxipam/ipamd/config"
	"github.com/sandboxipam/sandboxipam/ipamd/daemon"
	"github.com/sandboxipam/sandboxipam/ipamd/introspect/client"
)

func wantUnavailable(t *testing.T, err error, mention string) {
	t.Helper()
	var werr *wire.Error
	if !errors.As(err, &werr) || werr.Code != wire.CodeUnavailable || !strings.Contains(werr.Message, mention) {
		t.Fatalf("err = %v; want CodeUnavailable (CNI 11, try again later) mentioning %q", err, mention)
	}
}

// The second case: the state directory is lost and the adapter is
// down at start. ipamd serves, but hands out nothing until the runtime
// comes back and accounts for the live pods; then the live pods keep
// their addresses and new pods get others.
func TestLostStateWithTheRuntimeDownHandsOutNothingUntilProven(t *testing.T) {
	n := newNode(t, "198.18.0.0/28")
	n.addSandbox("live-1")
	n.setSandboxIP("live-1", "198.18.0.1")
	n.addSandbox("live-2")
	n.setSandboxIP("live-2", "198.18.0.2")
	n.setUnavailable(true)
	_, cni, intro := startInProcess(t, n)

	n.addSandbox("new-pod")
	_, err := cni.add(t.Context(), "new-pod")
	wantUnavailable(t, err, "datastore unproven")
	if ready, why, err := intro.Ready(t.Context()); err != nil || ready || !strings.Contains(why, "unproven") {
		t.Fatalf("readyz = %v %q %v; want not ready, unproven", ready, why, err)
	}
	if pool := mustPool(t, intro); !pool.Proof.Unproven || pool.Free != 0 {
		t.Fatalf("pool while the runtime is down = %+v", pool)
	}

	n.setUnavailable(false)
	waitReady(t, cni)
	if ip, err := cni.add(t.Context(), "new-pod"); err != nil || ip != "198.18.0.3/28" {
		t.Fatalf("ADD once proven = %q, %v; want 198.18.0.3/28, past the live pods' addresses", ip, err)
	}
	got := podsByID(mustPods(t, intro))
	if len(got) != 3 || got["live-1"] != "198.18.0.1/28" || got["live-2"] != "198.18.0.2/28" {
		t.Fatalf("pods = %v", got)
	}
}

// The first case through the daemon: the runtime lists live pods
// without IPs, and nothing on the node accounts for them.
func TestLostStateWithPodsReportingNoIPRefusesNamingThem(t *testing.T) {
	n := newNode(t, "198.18.0.0/28")
	n.cfg.Advanced.Reconcile.LinkGrace = time.Hour // the pod may still be wired for as long as the test runs
	n.addSandbox("93e629d853d9f70464dd5b54987533ffe87930cb28a6414ddb48c94b69845e85")
	_, cni, intro := startInProcess(t, n)
	testsupport.Wait(t, "a pass to report the unaccounted pod", func() (bool, string) {
		pool := mustPool(t, intro)
		return len(pool.Proof.Waiting) == 1 && strings.Contains(pool.Proof.Waiting[0], "93e629d853d9"), strings.Join(pool.Proof.Waiting, "; ")
	})
	_, err := cni.add(t.Context(), "new-pod")
	wantUnavailable(t, err, "93e629d853d9f70464dd5b54987533ffe87930cb28a6414ddb48c94b69845e85")
	// The pod goes away: the next pass proves the pool.
	n.removeSandbox("93e629d853d9f70464dd5b54987533ffe87930cb28a6414ddb48c94b69845e85")
	if _, err := intro.Reconcile(t.Context(), false); err != nil {
		t.Fatal(err)
	}
	if ip, err := cni.add(t.Context(), "new-pod"); err != nil || ip != "198.18.0.1/28" {
		t.Fatalf("ADD once proven = %q, %v", ip, err)
	}
}

// writeHungAdapter is an adapter binary that never completes go-plugin's
// handshake.
func writeHungAdapter(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "hung-adapter")
	if err := os.WriteFile(path, []byte("#!/bin/sh\nexec sleep 3600\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// With a trusted checkpoint, a hung adapter delays nothing: the socket is
// open when Start returns and ADD and DEL are served at once, although
// the adapter's launch can take up to its start timeout (an hour here).
func TestHungAdapterDoesNotDelayTheCNISocket(t *testing.T) {
	n := newNode(t, "198.18.0.0/28")
	n.addSandbox("first")
	d, cni, _ := startInProcess(t, n)
	waitReady(t, cni)
	if ip, err := cni.add(t.Context(), "first"); err != nil || ip != "198.18.0.1/28" {
		t.Fatalf("ADD = %q, %v", ip, err)
	}
	if err := d.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}

	n.cfg.Runtime.Adapter = writeHungAdapter(t)
	n.cfg.Runtime.Args = nil
	n.cfg.Advanced.Adapter.StartTimeout = time.Hour
	_, cni, intro := startInProcess(t, n)
	if ip, err := cni.add(t.Context(), "second"); err != nil || ip != "198.18.0.2/28" {
		t.Fatalf("ADD right after start with a hung adapter = %q, %v", ip, err)
	}
	if released, err := cni.del(t.Context(), "first"); err != nil || !released {
		t.Fatalf("DEL right after start with a hung adapter = %v, %v", released, err)
	}
	if ready, why, err := intro.Ready(t.Context()); err != nil || !ready {
		t.Fatalf("readyz with a trusted checkpoint = %v %q %v; want ready", ready, why, err)
	}
}

// auto with two runtimes answering (Docker's own containerd beside
// Docker, say) cannot know which one kubelet uses: ipamd names both and
// does not reconcile; without a checkpoint it hands out nothing.
func TestAutoWithTwoRuntimesRefusesToReconcile(t *testing.T) {
	n := newNode(t, "198.18.0.0/28")
	n.cfg.Runtime.Adapter = config.AdapterAuto
	n.cfg.Runtime.Args = nil
	n.cfg.Runtime.PluginDir = t.TempDir()
	answers := func(_ context.Context, socket string) bool {
		return socket == "/run/containerd/containerd.sock" || socket == "/var/run/docker.sock"
	}
	logger := slog.New(slog.NewTextHandler(testLogWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	d := daemon.New(n.cfg, daemon.Options{Logger: logger, Probe: answers})
	if err := d.Start(t.Context()); err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { _ = d.Stop(context.Background()) })
	intro := client.NewAdmin(n.cfg.AdminSocketPath())
	testsupport.Wait(t, "the adapter view to say auto refused", func() (bool, string) {
		a, err := intro.Adapter(t.Context())
		return err == nil && strings.Contains(a.Error, "/run/containerd/containerd.sock") && strings.Contains(a.Error, "/var/run/docker.sock"), a.Error
	})
	var apiErr *client.APIError
	if _, err := intro.Reconcile(t.Context(), false); !errors.As(err, &apiErr) || apiErr.Status != 503 || !strings.Contains(err.Error(), "set runtime.adapter") {
		t.Fatalf("reconcile = %v; want 503 saying to set runtime.adapter", err)
	}
	_, err := (cniClient{socket: n.cfg.Socket}).add(t.Context(), "new-pod")
	wantUnavailable(t, err, "several container runtimes answer")
}

// A full state disk answers try again later (CNI code 11), naming the real
// checkpoint path, never a temporary file; the address is not lost once
// space is back.
func TestFullStateDiskAnswersTryAgainLater(t *testing.T) {
	testsupport.RequireRoot(t, "mount", "umount")
	n := newNode(t, "198.18.0.0/28")
	if err := os.MkdirAll(n.cfg.StateDir, 0o700); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=64k,mode=0700", "tmpfs", n.cfg.StateDir).CombinedOutput(); err != nil {
		testsupport.SkipOrFail(t, "mount a tmpfs: %v: %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("umount", "-l", n.cfg.StateDir).Run() })
	n.addSandbox("a")
	_, cni, _ := startInProcess(t, n)
	waitReady(t, cni)
	filler := filepath.Join(n.cfg.StateDir, "filler")
	f, err := os.Create(filler)
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := f.Write(make([]byte, 4096)); err != nil {
			break
		}
	}
	f.Close()
	var lastErr error
	for i := range 40 { // journal appends until the disk refuses one
		_, lastErr = cni.add(t.Context(), "pod-"+strings.Repeat("x", 200)+string(rune('a'+i%26))+string(rune('a'+i/26)))
		if lastErr != nil {
			break
		}
	}
	wantUnavailable(t, lastErr, n.cfg.CheckpointPath())
	if strings.Contains(lastErr.Error(), ".tmp-") {
		t.Fatalf("error names a temporary file: %v", lastErr)
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	if _, err := cni.add(t.Context(), "after-space-is-back"); err != nil {
		t.Fatalf("ADD once space is back: %v", err)
	}
}

// The CNI conflist appears only once ipamd can serve ADD: a runtime that
// sees the network before then would fail pods instead of waiting.
func TestConfListIsWrittenOnceIpamdIsReady(t *testing.T) {
	n := newNode(t, "198.18.0.0/28")
	n.cfg.CNI.ConfListPath = filepath.Join(n.dir, "net.d", "10-sandboxipam.conflist")
	n.setUnavailable(true)
	_, cni, intro := startInProcess(t, n)
	if ready, why, err := intro.Ready(t.Context()); err != nil || ready || !strings.Contains(why, "conflist") {
		t.Fatalf("readyz before proof = %v %q %v; want not ready, naming the conflist", ready, why, err)
	}
	if _, err := os.Stat(n.cfg.CNI.ConfListPath); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("conflist before ipamd is ready: %v", err)
	}
	n.setUnavailable(false)
	waitReady(t, cni)
	testsupport.Wait(t, "readyz", func() (bool, string) {
		ready, why, err := intro.Ready(t.Context())
		return err == nil && ready, why
	})
	data, err := os.ReadFile(n.cfg.CNI.ConfListPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"name": "` + n.cfg.Network + `"`, `"type": "sandboxipam"`, `"ipamdSocket": "` + n.cfg.Socket + `"`, `"portMappings": true`, `"backend": "iptables"`} {
		if !strings.Contains(string(data), want) {
			t.Fatalf("conflist lacks %s:\n%s", want, data)
		}
	}
}

// A graceful stop withdraws the conflist ipamd wrote, even when a
// reconcile pass wrote it again after the preStop hook removed it, and
// leaves a conflist that is not ipamd's.
func TestStopWithdrawsTheConfList(t *testing.T) {
	for _, tc := range []struct {
		name    string
		foreign bool
	}{{"ours", false}, {"someone else's", true}} {
		t.Run(tc.name, func(t *testing.T) {
			n := newNode(t, "198.18.0.0/28")
			n.cfg.CNI.ConfListPath = filepath.Join(n.dir, "net.d", "10-sandboxipam.conflist")
			d, cni, _ := startInProcess(t, n)
			waitReady(t, cni)
			testsupport.Wait(t, "the conflist is written", func() (bool, string) {
				_, err := os.Stat(n.cfg.CNI.ConfListPath)
				return err == nil, fmt.Sprint(err)
			})
			const foreign = `{"cniVersion":"1.0.0","name":"other","plugins":[{"type":"bridge"}]}` + "\n"
			if tc.foreign {
				if err := os.WriteFile(n.cfg.CNI.ConfListPath, []byte(foreign), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if err := d.Stop(t.Context()); err != nil {
				t.Fatalf("Stop: %v", err)
			}
			data, err := os.ReadFile(n.cfg.CNI.ConfListPath)
			switch {
			case tc.foreign && string(data) != foreign:
				t.Fatalf("someone else's conflist after Stop = %q, %v; want it untouched", data, err)
			case !tc.foreign && !errors.Is(err, os.ErrNotExist):
				t.Fatalf("ipamd's conflist after Stop: %q, %v; want it removed", data, err)
			}
		})
	}
}
