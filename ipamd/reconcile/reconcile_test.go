package reconcile_test

import (
	"context"
	"errors"
	"maps"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/sandboxipam/sandboxipam/internal/testadapter"
	"github.com/sandboxipam/sandboxipam/ipamd/datastore"
	"github.com/sandboxipam/sandboxipam/ipamd/reconcile"
	"github.com/sandboxipam/sandboxipam/runtime"
)

func TestReleasesOnlySandboxesAbsentFromTheListing(t *testing.T) {
	n := newNode(t)
	n.assign("ready", "198.18.0.1")
	n.assign("stopped", "198.18.0.2")
	n.assign("gone", "198.18.0.3")
	n.assign("hostnet", "198.18.0.4")
	host := sandbox("hostnet", runtime.StateReady)
	host.HostNetwork = true
	n.setRuntime(testadapter.State{Sandboxes: []runtime.Sandbox{
		sandbox("ready", runtime.StateReady, "198.18.0.1"),
		sandbox("stopped", runtime.StateNotReady, "198.18.0.2"), // still owns its IP
		host, // owns no pod IP: does not protect one
	}})
	n.clock.Set(t0.Add(time.Minute))
	r := reconcile.New(n.store, n.adapter, reconcile.Config{Network: "pods", Now: n.clock.Now, Logger: discard()})
	res, err := r.RunOnce(context.Background(), false)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"gone": "198.18.0.3", "hostnet": "198.18.0.4"}
	if got := released(res.Released); !maps.Equal(got, want) || res.Listed != 3 || res.Err != "" || res.DryRun {
		t.Fatalf("Result = %+v, released %v; want %v", res, got, want)
	}
	if got := released(n.store.Assignments()); !maps.Equal(got, map[string]string{"ready": "198.18.0.1", "stopped": "198.18.0.2"}) {
		t.Fatalf("left %v", got)
	}
	if st := n.store.Stats(); st.Cooling != 2 {
		t.Fatalf("Stats = %+v: released addresses must cool down", st)
	}
}

func TestGraceProtectsYoungAssignments(t *testing.T) {
	n := newNode(t)
	n.assign("old", "198.18.0.1")
	n.clock.Set(t0.Add(45 * time.Second))
	n.assign("young", "198.18.0.2")
	n.clock.Set(t0.Add(time.Minute)) // old is 60s old, young 15s
	n.setRuntime(testadapter.State{Sandboxes: []runtime.Sandbox{}})
	r := reconcile.New(n.store, n.adapter, reconcile.Config{Network: "pods", Now: n.clock.Now, Logger: discard()})
	res, err := r.RunOnce(context.Background(), false)
	if err != nil {
		t.Fatal(err)
	}
	if got := released(res.Released); !maps.Equal(got, map[string]string{"old": "198.18.0.1"}) {
		t.Fatalf("released %v, want only old", got)
	}
	if _, ok := n.store.Lookup(datastore.Key{Network: "pods", SandboxID: "young", IfName: "eth0"}); !ok {
		t.Fatal("young assignment was released within its grace period")
	}
}

func TestFailedListingReleasesNothing(t *testing.T) {
	cases := map[string]func(n *node){
		"unavailable":   func(n *node) { n.setRuntime(testadapter.State{Unavailable: true}) },
		"wrong runtime": func(n *node) { n.setRuntime(testadapter.State{WrongRuntime: true}) },
		"state missing": func(n *node) {
			if err := os.Remove(n.statePath); err != nil {
				t.Fatal(err)
			}
		},
		"hangs": func(n *node) { n.setRuntime(testadapter.State{Hang: true}) },
	}
	for name, breakRuntime := range cases {
		t.Run(name, func(t *testing.T) {
			n := newNode(t)
			n.assign("a", "198.18.0.1")
			breakRuntime(n)
			n.clock.Set(t0.Add(time.Hour))
			r := reconcile.New(n.store, n.adapter, reconcile.Config{
				Network: "pods", Now: n.clock.Now, Logger: discard(), ListTimeout: 50 * time.Millisecond,
			})
			res, err := r.RunOnce(context.Background(), false)
			if err == nil || res.Err == "" || len(res.Released) != 0 {
				t.Fatalf("RunOnce = %+v, %v; want an error and nothing released", res, err)
			}
			if name == "hangs" && !strings.Contains(res.Err, "timed out") {
				t.Fatalf("Err = %q, want it to say the listing timed out", res.Err)
			}
			if len(n.store.Assignments()) != 1 {
				t.Fatal("an assignment was released after a failed listing")
			}
			if last, ok := r.Last(); !ok || last.Err != res.Err {
				t.Fatalf("Last = %+v, %v", last, ok)
			}
		})
	}
}

func TestDryRunReleasesNothing(t *testing.T) {
	n := newNode(t)
	n.assign("gone", "198.18.0.1")
	n.setRuntime(testadapter.State{Sandboxes: []runtime.Sandbox{}})
	n.clock.Set(t0.Add(time.Hour))
	r := reconcile.New(n.store, n.adapter, reconcile.Config{Network: "pods", Now: n.clock.Now, Logger: discard()})
	res, err := r.RunOnce(context.Background(), true)
	if err != nil {
		t.Fatal(err)
	}
	if got := released(res.Released); !res.DryRun || !maps.Equal(got, map[string]string{"gone": "198.18.0.1"}) {
		t.Fatalf("dry run = %+v", res)
	}
	if len(n.store.Assignments()) != 1 {
		t.Fatal("dry run released an assignment")
	}
}

// After a lost checkpoint the first pass adopts the runtime's sandboxes
// under their real sandbox IDs, so the next DEL matches: the seed bug's
// restart, done right.
func TestLostCheckpointIsRebuiltFromTheRuntime(t *testing.T) {
	n := newNode(t)
	n.assign("93e629d853d9f70464dd5b54987533ffe87930cb28a6414ddb48c94b69845e85", "198.18.0.1")
	n.assign("c32c237fb5293478da938e388f6e22486790facba0d178ff24271829865976cf", "198.18.0.2")
	if err := n.store.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(n.storePath, []byte("torn"), 0o600); err != nil {
		t.Fatal(err)
	}
	n.openStore()
	if !n.store.Unproven() {
		t.Fatal("store should be unproven")
	}
	host := sandbox("kube-proxy", runtime.StateReady)
	host.HostNetwork = true
	n.setRuntime(testadapter.State{Sandboxes: []runtime.Sandbox{
		sandbox("93e629d853d9f70464dd5b54987533ffe87930cb28a6414ddb48c94b69845e85", runtime.StateReady, "198.18.0.1"),
		sandbox("c32c237fb5293478da938e388f6e22486790facba0d178ff24271829865976cf", runtime.StateReady, "198.18.0.2"),
		host,
	}})
	var results []reconcile.Result
	r := reconcile.New(n.store, n.adapter, reconcile.Config{Network: "pods", Now: n.clock.Now, Logger: discard(),
		OnResult: func(res reconcile.Result) { results = append(results, res) }})
	res, err := r.RunOnce(context.Background(), false)
	if err != nil {
		t.Fatal(err)
	}
	if res.Adopted != 2 || len(res.Released) != 0 || n.store.Unproven() || len(results) != 1 {
		t.Fatalf("Result = %+v, unproven %v", res, n.store.Unproven())
	}
	// The real DEL for the deleted coredns pod now finds its IP.
	a, found, err := n.store.Release(context.Background(), datastore.Key{Network: "pods",
		SandboxID: "93e629d853d9f70464dd5b54987533ffe87930cb28a6414ddb48c94b69845e85", IfName: "eth0"})
	if err != nil || !found || a.Address.IP.String() != "198.18.0.1" {
		t.Fatalf("DEL after rebuild = %+v, %v, %v", a, found, err)
	}
	n.assign("new", "198.18.0.3")
}

func TestIncompleteListingKeepsTheStoreUnproven(t *testing.T) {
	n := newNode(t)
	if err := n.store.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(n.storePath, []byte("garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	n.openStore()
	n.setRuntime(testadapter.State{Sandboxes: []runtime.Sandbox{
		sandbox("a", runtime.StateReady, "198.18.0.1"),
		sandbox("no-ip-reported", runtime.StateNotReady),
	}})
	r := reconcile.New(n.store, n.adapter, reconcile.Config{Network: "pods", Now: n.clock.Now, Logger: discard()})
	res, err := r.RunOnce(context.Background(), false)
	if err != nil || res.Adopted != 1 || !n.store.Unproven() {
		t.Fatalf("Result = %+v, %v, unproven %v", res, err, n.store.Unproven())
	}
	if _, err := n.store.Assign(context.Background(), datastore.Key{Network: "pods", SandboxID: "x", IfName: "eth0"}, datastore.Pod{}); !errors.Is(err, datastore.ErrUnproven) {
		t.Fatalf("Assign = %v, want ErrUnproven", err)
	}
	// The stopped sandbox is removed; the next pass proves the pool.
	n.setRuntime(testadapter.State{Sandboxes: []runtime.Sandbox{sandbox("a", runtime.StateReady, "198.18.0.1")}})
	if _, err := r.RunOnce(context.Background(), false); err != nil || n.store.Unproven() {
		t.Fatalf("second pass: %v, unproven %v", err, n.store.Unproven())
	}
	n.assign("x", "198.18.0.2")
}

// A first start (no checkpoint) trusts the empty store but still adopts
// what the runtime reports, so a pod that survived a wiped state
// directory keeps its address.
func TestFirstStartAdoptsRunningSandboxes(t *testing.T) {
	n := newNode(t)
	n.setRuntime(testadapter.State{Sandboxes: []runtime.Sandbox{sandbox("survivor", runtime.StateReady, "198.18.0.1")}})
	r := reconcile.New(n.store, n.adapter, reconcile.Config{Network: "pods", Now: n.clock.Now, Logger: discard()})
	res, err := r.RunOnce(context.Background(), false)
	if err != nil || res.Adopted != 1 {
		t.Fatalf("Result = %+v, %v", res, err)
	}
	n.assign("new", "198.18.0.2")
	if res, err := r.RunOnce(context.Background(), false); err != nil || res.Adopted != 0 {
		t.Fatalf("second pass adopted again: %+v, %v", res, err)
	}
}

func TestRunPassesAtStartUntilCancelled(t *testing.T) {
	n := newNode(t)
	n.assign("gone", "198.18.0.1")
	n.clock.Set(t0.Add(time.Hour))
	ctx, cancel := context.WithCancel(context.Background())
	results := make(chan reconcile.Result, 1)
	r := reconcile.New(n.store, n.adapter, reconcile.Config{Network: "pods", Now: n.clock.Now, Logger: discard(),
		Interval: time.Hour, OnResult: func(res reconcile.Result) { results <- res; cancel() }})
	done := make(chan struct{})
	go func() { r.Run(ctx); close(done) }()
	res := <-results
	<-done
	if got := released(res.Released); !maps.Equal(got, map[string]string{"gone": "198.18.0.1"}) {
		t.Fatalf("first pass released %v", got)
	}
}
