package compat_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	ipamdv1 "github.com/sandboxipam/sandboxipam/ipamd/api/v1"
	"github.com/sandboxipam/sandboxipam/ipamd/api/wire"
)

// TestPluginAgainstOtherIPAMD: for the length of a rollout a node's CNI
// plugin and its ipamd may be of different releases. Each release's plugin
// against the other's ipamd: STATUS, ADD (exact addresses), CHECK (and a
// CHECK that must fail: an address ipamd does not hold), DEL, DEL again
// (idempotent), each answered right.
func TestPluginAgainstOtherIPAMD(t *testing.T) {
	prev, cur := previousBuild(t), currentBuild(t)
	for _, tc := range []struct {
		name          string
		plugin, ipamd build
	}{
		{"previous plugin, this ipamd", prev, cur},
		{"this plugin, previous ipamd", cur, prev},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := newNode(t)
			n.dumpOnFailure()
			r := n.start(tc.ipamd, false)
			n.cni(tc.plugin, "STATUS", "", nil).must(t, "STATUS through the "+tc.plugin.name+" plugin")
			resX := n.add(tc.plugin, "pod-x", addrA...)
			n.add(tc.plugin, "pod-y", addrB...)
			n.check(tc.plugin, "pod-x", resX)
			// pod-y's result for pod-x: ipamd holds other addresses for it.
			wrong := []byte(strings.ReplaceAll(strings.ReplaceAll(string(resX), "198.18.10.1/", "198.18.10.2/"), "fd00:10::1/", "fd00:10::2/"))
			o := n.cni(tc.plugin, "CHECK", "pod-x", wrong)
			if o.err == nil || !strings.Contains(o.err.Error(), "CNI error 102: ipamd does not hold 198.18.10.2 for sandbox "+sandboxID("pod-x")) {
				t.Fatalf("CHECK pod-x against pod-y's addresses through the %s plugin: %v; want CNI error 102 naming 198.18.10.2", tc.plugin.name, o.err)
			}
			n.del(tc.plugin, "pod-x")
			n.del(tc.plugin, "pod-x") // DEL is idempotent
			r.requirePods(map[string][]string{"pod-y": addrs(addrB...)})
			// pod-x's addresses cool; the next ADD gets the ones after pod-y's.
			n.add(tc.plugin, "pod-z", addrC...)
			r.requirePods(map[string][]string{"pod-y": addrs(addrB...), "pod-z": addrs(addrC...)})
			r.stop()
		})
	}
}

// TestNewerRequestRefusedByName: a plugin newer than ipamd may send a
// method or a field this ipamd does not know. This release's ipamd refuses
// either with an error naming it, and assigns nothing: it never answers a
// question other than the one asked.
func TestNewerRequestRefusedByName(t *testing.T) {
	cur := currentBuild(t)
	n := newNode(t)
	n.dumpOnFailure()
	r := n.start(cur, false)
	add, err := proto.Marshal(&ipamdv1.AddRequest{
		Attachment: &ipamdv1.Attachment{Network: network, SandboxId: sandboxID("pod-new"), Ifname: "eth0"},
		Netns:      "/var/run/netns/pod-new", Pod: &ipamdv1.PodRef{Name: "pod-new", Namespace: "default"},
		Wiring: ipamdv1.Wiring_WIRING_IPAM_ONLY,
	})
	if err != nil {
		t.Fatal(err)
	}
	// Field 42 of AddRequest, a string: what a newer plugin's new
	// request field would look like on the wire.
	newer := protowire.AppendString(protowire.AppendTag(add, 42, protowire.BytesType), "static-mac")
	for _, tc := range []struct {
		name    string
		method  wire.Method
		payload []byte
		code    wire.Code
		want    string
	}{
		{"unknown method", wire.Method(6), nil, wire.CodeUnimplemented, "unknown method Method(6)"},
		{"unknown field", wire.MethodAdd, newer, wire.CodeInvalidArgument,
			"Add request carries field 42 of sandboxipam.ipamd.v1.AddRequest, which this ipamd (v0.2.0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			c, err := wire.Dial(ctx, n.cfg.Socket)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			_, err = c.Exchange(ctx, tc.method, tc.payload)
			var werr *wire.Error
			if !errors.As(err, &werr) || werr.Code != tc.code || !strings.HasPrefix(werr.Message, tc.want) {
				t.Fatalf("%s: %v; want %s starting %q", tc.name, err, tc.code, tc.want)
			}
			t.Logf("ipamd answered: %s", werr.Message)
		})
	}
	r.requirePods(map[string][]string{})
	// The same ADD without the unknown field is answered.
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	c, err := wire.Dial(ctx, n.cfg.Socket)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Exchange(ctx, wire.MethodAdd, add); err != nil {
		t.Fatalf("the ADD without field 42: %v", err)
	}
	r.requirePods(map[string][]string{"pod-new": addrs(addrA...)})
}
