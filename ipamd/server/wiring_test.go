package server_test

import (
	"context"
	"strings"
	"testing"

	"github.com/sandboxipam/sandboxipam/ipamd/api/apierr"
	ipamdv1 "github.com/sandboxipam/sandboxipam/ipamd/api/v1"
	"github.com/sandboxipam/sandboxipam/ipamd/api/wire"
	"github.com/sandboxipam/sandboxipam/ipamd/datastore"
	"github.com/sandboxipam/sandboxipam/ipamd/server"
)

// How the plugin ran is recorded with each assignment; an old plugin that
// says nothing is unknown.
func TestAddRecordsHowThePluginRan(t *testing.T) {
	h := newHarness(t, "198.18.0.0/29")
	for id, w := range map[string]ipamdv1.Wiring{
		"main": ipamdv1.Wiring_WIRING_MAIN_PLUGIN, "ipam": ipamdv1.Wiring_WIRING_IPAM_ONLY, "old": ipamdv1.Wiring_WIRING_UNKNOWN,
	} {
		req := addReq(id)
		req.Wiring = w
		if _, err := h.srv.Add(context.Background(), req); err != nil {
			t.Fatalf("Add %s: %v", id, err)
		}
	}
	want := map[string]datastore.Wiring{"main": datastore.WiringMainPlugin, "ipam": datastore.WiringIPAMOnly, "old": datastore.WiringUnknown}
	for id, w := range want {
		a, ok := h.store.Lookup(datastore.Key{Network: "testnet", SandboxID: id, IfName: "eth0"})
		if !ok || a.Wiring != w {
			t.Errorf("assignment %s: wiring %q (found %v), want %q", id, a.Wiring, ok, w)
		}
	}
	req := addReq("bad")
	req.Wiring = 7
	if _, err := h.srv.Add(context.Background(), req); apierr.Code(err) != wire.CodeInvalidArgument || !strings.Contains(err.Error(), "wiring 7") {
		t.Errorf("Add with wiring 7 = %v; want InvalidArgument naming wiring", err)
	}
}

// A wrong setting shows on the first pod: on a node configured as "the
// plugin wires every pod", an ADD from the plugin as IPAM only is refused
// with an error naming the setting, and counted; nothing is assigned.
func TestIPAMOnlyAddRefusedWhenThePluginWiresEveryPod(t *testing.T) {
	h := newHarness(t, "198.18.0.0/29")
	refused := 0
	srv := server.New(h.store, server.Options{RefuseIPAMOnly: "podLinks.podWiring is plugin", OnWiringRefused: func() { refused++ }})
	req := addReq("ipam-pod")
	req.Wiring = ipamdv1.Wiring_WIRING_IPAM_ONLY
	_, err := srv.Add(context.Background(), req)
	if apierr.Code(err) != wire.CodeFailedPrecondition || !strings.Contains(err.Error(), "podLinks.podWiring is plugin") ||
		!strings.Contains(err.Error(), "set podLinks.podWiring to ipamOnly") {
		t.Fatalf("Add = %v; want FailedPrecondition naming podLinks.podWiring", err)
	}
	if refused != 1 {
		t.Errorf("refused %d times, want 1", refused)
	}
	if st := h.store.Stats(); st.Assigned != 0 {
		t.Errorf("Stats %+v: the refused ADD holds an address", st)
	}
	req = addReq("main-pod")
	req.Wiring = ipamdv1.Wiring_WIRING_MAIN_PLUGIN
	if resp, err := srv.Add(context.Background(), req); err != nil || resp.Ips[0].Address != "198.18.0.1/29" {
		t.Fatalf("Add from the main plugin = %v, %v; want 198.18.0.1/29", resp, err)
	}
}
