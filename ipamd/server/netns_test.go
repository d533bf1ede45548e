package server_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/sandboxipam/sandboxipam/internal/testsupport"
	"github.com/sandboxipam/sandboxipam/ipamd/datastore"
	"github.com/sandboxipam/sandboxipam/ipamd/hostlinks"
	"github.com/sandboxipam/sandboxipam/ipamd/server"
)

// ADD records the pod's network namespace with the assignment: its path,
// and its identity when ipamd can open it here; a path it cannot open
// (ipamd in a container without the host's /run/netns) is recorded alone.
func TestAddRecordsTheNetNS(t *testing.T) {
	testsupport.RequireRoot(t, "unshare", "umount")
	h := newHarness(t, "198.18.0.0/29")
	srv := server.New(h.store, server.Options{NetNSIdentity: hostlinks.NetNSIdentity})
	path := filepath.Join(t.TempDir(), "cni-5d3a")
	testsupport.NetNS(t, path)
	dev, ino, err := hostlinks.NetNSIdentity(path)
	if err != nil {
		t.Fatal(err)
	}
	req := addReq("in-ns")
	req.Netns = path
	if _, err := srv.Add(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	if _, err := srv.Add(context.Background(), addReq("unseen")); err != nil { // /var/run/netns/unseen: not here
		t.Fatal(err)
	}
	for id, want := range map[string]datastore.NetNS{
		"in-ns":  {Path: path, Dev: dev, Ino: ino},
		"unseen": {Path: "/var/run/netns/unseen"},
	} {
		a, ok := h.store.Lookup(datastore.Key{Network: "testnet", SandboxID: id, IfName: "eth0"})
		if !ok || a.NetNS != want {
			t.Errorf("assignment %s: netns %+v (found %v), want %+v", id, a.NetNS, ok, want)
		}
	}
}
