package daemon_test

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/sandboxipam/sandboxipam/internal/testsupport"
	"github.com/sandboxipam/sandboxipam/ipamd/introspect/schema"
)

// TestReconcileDryRunThenRelease: POST /v1/reconcile?dryRun=true shows
// the one assignment whose sandbox is gone and releases nothing; the real
// pass then releases exactly it.
func TestReconcileDryRunThenRelease(t *testing.T) {
	n := newNode(t, "198.18.0.0/28")
	n.addSandbox("live")
	n.addSandbox("gone")
	_, cni, intro := startInProcess(t, n)
	ctx := t.Context()
	testsupport.Eventually(t, "the adapter to be healthy", func() bool { return adapterHealth(t, intro).Healthy })
	waitReady(t, cni)
	for _, pod := range []struct{ id, want string }{{"live", "198.18.0.1/28"}, {"gone", "198.18.0.2/28"}} {
		if ip, err := cni.add(ctx, pod.id); err != nil || ip != pod.want {
			t.Fatalf("add %s = %q, %v; want %s", pod.id, ip, err, pod.want)
		}
	}
	// The runtime lists both once, as before any pod is deleted.
	if res := mustReconcile(t, intro, 2); len(res.Released) != 0 {
		t.Fatalf("a pass with both pods listed released %+v", res.Released)
	}
	n.removeSandbox("gone")

	// A dry run changes nothing, so it can be repeated until the grace
	// (1ms here) has passed for the assignment; a pass that starts within
	// it rightly protects the assignment.
	var dry schema.Reconcile
	testsupport.Wait(t, "a dry run to find gone past its grace", func() (bool, string) {
		var err error
		dry, err = intro.Reconcile(ctx, true)
		if err != nil {
			t.Fatalf("dry run: %v", err)
		}
		return len(dry.Released) > 0, fmt.Sprintf("%+v", dry)
	})
	if !dry.DryRun || dry.Listed != 1 || len(dry.Released) != 1 || dry.Released[0].SandboxID != "gone" || dry.Released[0].IP != "198.18.0.2" {
		t.Fatalf("dry run = %+v; want gone would be released", dry)
	}
	if got := podsByID(mustPods(t, intro)); len(got) != 2 {
		t.Fatalf("a dry run released something: %v", got)
	}
	res, err := intro.Reconcile(ctx, false)
	if err != nil || res.DryRun || len(res.Released) != 1 || res.Released[0].SandboxID != "gone" || res.Released[0].IP != "198.18.0.2" {
		t.Fatalf("real pass = %+v, %v", res, err)
	}
	if got := podsByID(mustPods(t, intro)); len(got) != 1 || got["live"] == "" {
		t.Fatalf("pods after the pass = %v, want only live", got)
	}
	a, err := intro.Adapter(ctx)
	if err != nil || a.Last == nil || len(a.Last.Released) != 1 || a.Last.Released[0].SandboxID != "gone" {
		t.Fatalf("/v1/adapter last pass = %+v, %v", a.Last, err)
	}
}

// TestCorruptCheckpointAdoptsFromRuntime: with the checkpoint destroyed,
// ipamd hands out nothing until the runtime's listing (with the pods' IPs
// from sandbox status) is adopted; then live pods keep their IPs, a new
// pod gets another, and DEL by sandbox ID releases an adopted one.
func TestCorruptCheckpointAdoptsFromRuntime(t *testing.T) {
	n := newNode(t, "198.18.0.0/28")
	for _, id := range []string{"pod-a", "pod-b"} {
		n.addSandbox(id)
	}
	d, cni, _ := startInProcess(t, n)
	ctx := t.Context()
	waitReady(t, cni)
	ipA, err := cni.add(ctx, "pod-a")
	if err != nil {
		t.Fatal(err)
	}
	ipB, err := cni.add(ctx, "pod-b")
	if err != nil {
		t.Fatal(err)
	}
	if ipA != "198.18.0.1/28" || ipB != "198.18.0.2/28" {
		t.Fatalf("addresses %s %s", ipA, ipB)
	}
	n.setSandboxIP("pod-a", "198.18.0.1")
	n.setSandboxIP("pod-b", "198.18.0.2")
	if err := d.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(n.cfg.CheckpointPath(), []byte("{not a checkpoint"), 0o600); err != nil {
		t.Fatal(err)
	}

	_, cni, intro := startInProcess(t, n)
	if pool := mustPool(t, intro); pool.Recovery.Checkpoint != "corrupt" {
		t.Fatalf("recovery = %+v, want corrupt", pool.Recovery)
	}
	waitReady(t, cni) // the runtime's listing is adopted
	got := podsByID(mustPods(t, intro))
	if len(got) != 2 || got["pod-a"] != "198.18.0.1/28" || got["pod-b"] != "198.18.0.2/28" {
		t.Fatalf("adopted pods = %v", got)
	}
	n.addSandbox("pod-c")
	if ip, err := cni.add(ctx, "pod-c"); err != nil || ip == ipA || ip == ipB {
		t.Fatalf("add pod-c after adoption = %q, %v; must not reuse an adopted address", ip, err)
	}
	if released, err := cni.del(ctx, "pod-a"); err != nil || !released {
		t.Fatalf("DEL of adopted pod-a = %v, %v; want released", released, err)
	}
}

// TestMissingCheckpointAdoptsBeforeServing: a node whose state directory
// was wiped still runs pods; their IPs (from sandbox status) are adopted
// before the socket opens, so the very first ADD cannot take one.
func TestMissingCheckpointAdoptsBeforeServing(t *testing.T) {
	n := newNode(t, "198.18.0.0/28")
	n.addSandbox("running-1")
	n.setSandboxIP("running-1", "198.18.0.1")
	n.addSandbox("running-2")
	n.setSandboxIP("running-2", "198.18.0.2")
	_, cni, intro := startInProcess(t, n)
	// Serving waits for the adoption; on a busy machine the adapter may
	// still be launching when the socket opens, and ADDs are refused until
	// then.
	waitReady(t, cni)
	if pool := mustPool(t, intro); pool.Recovery.Checkpoint != "missing" || pool.Assigned != 2 {
		t.Fatalf("pool at first ADD = %+v, want 2 adopted", pool)
	}
	n.addSandbox("new-pod")
	if ip, err := cni.add(t.Context(), "new-pod"); err != nil || ip != "198.18.0.3/28" {
		t.Fatalf("first ADD = %q, %v; want 198.18.0.3/28, past the adopted addresses", ip, err)
	}
	got := podsByID(mustPods(t, intro))
	if len(got) != 3 || got["running-1"] != "198.18.0.1/28" || got["running-2"] != "198.18.0.2/28" {
		t.Fatalf("pods = %v", got)
	}
}
