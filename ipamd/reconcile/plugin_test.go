package reconcile_test

import (
	"context"
	"errors"
	"maps"
	"testing"
	"time"

	"github.com/sandboxipam/sandboxipam/internal/testadapter"
	"github.com/sandboxipam/sandboxipam/ipamd/reconcile"
	"github.com/sandboxipam/sandboxipam/runtime"
	"github.com/sandboxipam/sandboxipam/runtime/plugin/host"
)

// launch runs the test adapter as a real go-plugin subprocess over the
// node's state file, as ipamd runs an adapter.
func launch(t *testing.T, n *node) *host.Client {
	t.Helper()
	bin := testadapter.Build(t)
	c, err := host.Launch(context.Background(), host.Config{
		Path: bin, Args: []string{"--state=" + n.statePath}, Logger: discard(), DisableAutoMTLS: true,
		StartTimeout: time.Minute, // a cold start on a busy machine takes seconds
	})
	if err != nil {
		t.Fatalf("launch adapter plugin: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func TestThroughPluginReleasesAbsentSandboxes(t *testing.T) {
	n := newNode(t)
	n.assign("kept", "198.18.0.1")
	n.assign("gone", "198.18.0.2")
	n.setRuntime(testadapter.State{Sandboxes: []runtime.Sandbox{sandbox("kept", runtime.StateNotReady, "198.18.0.1"), sandbox("gone", runtime.StateReady)}})
	r := reconcile.New(n.store, launch(t, n), reconcile.Config{Network: "pods", Now: n.clock.Now, Logger: discard()})
	n.pass(r)
	n.setRuntime(testadapter.State{Sandboxes: []runtime.Sandbox{sandbox("kept", runtime.StateNotReady, "198.18.0.1")}})
	n.clock.Set(t0.Add(time.Minute))
	res, err := r.RunOnce(context.Background(), false)
	if err != nil {
		t.Fatal(err)
	}
	if got := released(res.Released); !maps.Equal(got, map[string]string{"gone": "198.18.0.2"}) || res.Listed != 1 {
		t.Fatalf("Result = %+v", res)
	}
}

func TestThroughPluginFailuresReleaseNothing(t *testing.T) {
	n := newNode(t)
	n.assign("a", "198.18.0.1")
	n.clock.Set(t0.Add(time.Hour))
	client := launch(t, n)
	// The default list timeout, so that a busy machine cannot turn the
	// unavailable runtime's answer into a timeout; a short one only for
	// the runtime that never answers.
	r := reconcile.New(n.store, client, reconcile.Config{Network: "pods", Now: n.clock.Now, Logger: discard()})
	hung := reconcile.New(n.store, client, reconcile.Config{Network: "pods", Now: n.clock.Now, Logger: discard(),
		ListTimeout: 200 * time.Millisecond})
	ctx := context.Background()

	n.setRuntime(testadapter.State{Unavailable: true})
	if res, err := r.RunOnce(ctx, false); !errors.Is(err, runtime.ErrUnavailable) || len(res.Released) != 0 {
		t.Fatalf("unavailable runtime: %+v, %v; want ErrUnavailable across the plugin boundary", res, err)
	}
	n.setRuntime(testadapter.State{Hang: true})
	if res, err := hung.RunOnce(ctx, false); err == nil || len(res.Released) != 0 {
		t.Fatalf("hung runtime: %+v, %v; want a timeout", res, err)
	}
	// The adapter process is gone: still nothing released.
	n.setRuntime(testadapter.State{Sandboxes: []runtime.Sandbox{}})
	if err := client.Close(); err != nil {
		t.Fatal(err)
	}
	if res, err := r.RunOnce(ctx, false); err == nil || len(res.Released) != 0 {
		t.Fatalf("dead adapter: %+v, %v", res, err)
	}
	if len(n.store.Assignments()) != 1 {
		t.Fatal("an assignment was released although no listing succeeded")
	}
}
