package reconcile_test

import (
	"context"
	"log/slog"
	"net/netip"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/sandboxipam/sandboxipam/internal/testadapter"
	"github.com/sandboxipam/sandboxipam/ipamd/datastore"
	"github.com/sandboxipam/sandboxipam/ipamd/ipsource/static"
	"github.com/sandboxipam/sandboxipam/runtime"
)

type clock struct {
	mu  sync.Mutex
	now time.Time
}

var t0 = time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
}

// node is a store, a runtime state file and an adapter over it.
type node struct {
	t         *testing.T
	clock     *clock
	storePath string
	statePath string
	store     *datastore.Store
	adapter   runtime.RuntimeAdapter
	// proveWhenMissing opens the store as ipamd does.
	proveWhenMissing bool
}

func newNode(t *testing.T) *node { return newNodeWith(t, false) }

// newNodeWith opens the store as ipamd does (no checkpoint is unproven)
// when proveWhenMissing is set.
func newNodeWith(t *testing.T, proveWhenMissing bool) *node {
	t.Helper()
	dir := t.TempDir()
	n := &node{
		t: t, clock: &clock{now: t0},
		storePath:        filepath.Join(dir, "ipamd", "checkpoint"),
		statePath:        filepath.Join(dir, "runtime.json"),
		proveWhenMissing: proveWhenMissing,
	}
	n.setRuntime(testadapter.State{RuntimeName: "containerd"})
	n.adapter = testadapter.New(n.statePath)
	n.openStore()
	return n
}

func (n *node) openStore() {
	n.t.Helper()
	ctx := context.Background()
	s, err := datastore.Open(ctx, datastore.Options{Path: n.storePath, Now: n.clock.Now, Logger: discard(),
		ProveWhenMissing: n.proveWhenMissing})
	if err != nil {
		n.t.Fatal(err)
	}
	n.t.Cleanup(func() { _ = s.Close() })
	cfg, err := static.ParseConfig([]string{"198.18.0.0/24"}, nil, nil)
	if err != nil {
		n.t.Fatal(err)
	}
	src, err := static.New(cfg)
	if err != nil {
		n.t.Fatal(err)
	}
	if err := src.Run(ctx, s); err != nil {
		n.t.Fatal(err)
	}
	n.store = s
}

func (n *node) setRuntime(st testadapter.State) {
	n.t.Helper()
	if err := testadapter.WriteState(n.statePath, st); err != nil {
		n.t.Fatal(err)
	}
}

func (n *node) assign(sandbox, want string) datastore.Assignment {
	n.t.Helper()
	a, err := n.store.Assign(context.Background(), datastore.Key{Network: "pods", SandboxID: sandbox, IfName: "eth0"},
		datastore.Pod{Name: "pod-" + sandbox, Namespace: "default", UID: "uid-" + sandbox})
	if err != nil {
		n.t.Fatal(err)
	}
	if a.Address.IP.String() != want {
		n.t.Fatalf("assign %s = %s, want %s", sandbox, a.Address.IP, want)
	}
	return a
}

func sandbox(id string, state runtime.SandboxState, ips ...string) runtime.Sandbox {
	sb := runtime.Sandbox{ID: id, Name: "pod-" + id, Namespace: "default", UID: "uid-" + id, State: state, CreatedAt: t0}
	for _, ip := range ips {
		sb.IPs = append(sb.IPs, netip.MustParseAddr(ip))
	}
	return sb
}

func released(as []datastore.Assignment) map[string]string {
	m := map[string]string{}
	for _, a := range as {
		m[a.SandboxID] = a.Address.IP.String()
	}
	return m
}

func discard() *slog.Logger { return slog.New(slog.DiscardHandler) }

// evidenceOf is what a listing of sandboxes reporting their IPs gives the
// datastore; listedOnly are listed without holdings.
func evidenceOf(sandboxes []runtime.Sandbox, at time.Time, listedOnly ...runtime.Sandbox) datastore.Evidence {
	ev := datastore.Evidence{Network: "pods", IfName: "eth0", At: at, Listed: map[string]struct{}{}}
	for _, sb := range sandboxes {
		ev.Listed[sb.ID] = struct{}{}
		for _, ip := range sb.IPs {
			ev.Holdings = append(ev.Holdings, datastore.Holding{IP: ip, SandboxID: sb.ID, Ready: true, Source: "runtime",
				Pod: datastore.Pod{Name: sb.Name, Namespace: sb.Namespace, UID: sb.UID}})
		}
	}
	for _, sb := range listedOnly {
		ev.Listed[sb.ID] = struct{}{}
	}
	return ev
}
