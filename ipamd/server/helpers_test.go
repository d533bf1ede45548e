package server_test

import (
	"context"
	"net/netip"
	"os"
	"path/filepath"
	"testing"
	"time"

	ipamdv1 "github.com/sandboxipam/sandboxipam/ipamd/api/v1"
	"github.com/sandboxipam/sandboxipam/ipamd/api/wire"
	"github.com/sandboxipam/sandboxipam/ipamd/datastore"
	"github.com/sandboxipam/sandboxipam/ipamd/ipsource/static"
	"github.com/sandboxipam/sandboxipam/ipamd/server"
)

// harness is a real datastore (checkpointing to a temp dir) filled by the
// real static source, served on a real unix socket.
type harness struct {
	t      testing.TB
	dir    string
	socket string
	store  *datastore.Store
	srv    *server.Server
	end    *server.Endpoint
}

// shortTempDir keeps the socket path under sun_path's 107 bytes. The
// benchmarks honour SANDBOXIPAM_BENCH_DIR, so the checkpoint's disk can be
// chosen (e.g. /dev/shm to measure the server without the disk).
func shortTempDir(t testing.TB) string {
	dir, err := os.MkdirTemp(os.Getenv("SANDBOXIPAM_BENCH_DIR"), "ipamd-srv")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

func newHarness(t testing.TB, cidr string) *harness {
	t.Helper()
	return newHarnessCIDRs(t, cidr)
}

// newHarnessCIDRs serves a static pool of cidrs (both families make it
// dual-stack).
func newHarnessCIDRs(t testing.TB, cidrs ...string) *harness {
	t.Helper()
	dir := shortTempDir(t)
	h := &harness{t: t, dir: dir, socket: filepath.Join(dir, "run", "ipamd.sock")}
	ctx := context.Background()
	store, err := datastore.Open(ctx, datastore.Options{Path: filepath.Join(dir, "state", "ipamd.checkpoint"), Cooldown: time.Nanosecond})
	if err != nil {
		t.Fatalf("open datastore: %v", err)
	}
	var prefixes []netip.Prefix
	for _, c := range cidrs {
		prefixes = append(prefixes, netip.MustParsePrefix(c))
	}
	src, err := static.New(static.Config{CIDRs: prefixes})
	if err != nil {
		t.Fatal(err)
	}
	if err := src.Run(ctx, store); err != nil {
		t.Fatal(err)
	}
	h.store = store
	h.srv = server.New(store, server.Options{})
	l, err := server.Listen(ctx, h.socket)
	if err != nil {
		t.Fatalf("Listen: %v", err)
	}
	h.end = server.Serve(l, h.srv.WireHandler(), nil)
	t.Cleanup(func() {
		if err := h.end.Stop(context.Background()); err != nil {
			t.Errorf("Stop: %v", err)
		}
		if err := store.Close(); err != nil {
			t.Errorf("close store: %v", err)
		}
	})
	return h
}

func (h *harness) wireClient() *wire.Client {
	h.t.Helper()
	c, err := wire.Dial(context.Background(), h.socket)
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() { c.Close() })
	return c
}

func attachment(sandbox string) *ipamdv1.Attachment {
	return &ipamdv1.Attachment{Network: "testnet", SandboxId: sandbox, Ifname: "eth0"}
}

func addReq(sandbox string) *ipamdv1.AddRequest {
	return &ipamdv1.AddRequest{Attachment: attachment(sandbox), Netns: "/var/run/netns/" + sandbox,
		Pod: &ipamdv1.PodRef{Name: "pod-" + sandbox, Namespace: "default", Uid: "uid-" + sandbox}}
}

func keyOf(a *ipamdv1.Attachment) datastore.Key {
	return datastore.Key{Network: a.GetNetwork(), SandboxID: a.GetSandboxId(), IfName: a.GetIfname()}
}
