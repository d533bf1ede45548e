package server_test

import (
	"context"
	"errors"
	"testing"

	ipamdv1 "github.com/sandboxipam/sandboxipam/ipamd/api/v1"
	"github.com/sandboxipam/sandboxipam/ipamd/api/wire"
	"google.golang.org/protobuf/proto"
)

// FuzzWireHandler: any method byte and payload is answered without a
// panic, and an Add that fails never leaves an address assigned.
func FuzzWireHandler(f *testing.F) {
	seed := func(m wire.Method, msg proto.Message) {
		b, err := proto.Marshal(msg)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(uint8(m), b)
	}
	seed(wire.MethodAdd, addReq("seed"))
	seed(wire.MethodAdd, &ipamdv1.AddRequest{Attachment: &ipamdv1.Attachment{Network: "n", SandboxId: "s", Ifname: "eth0/x"}})
	for _, w := range []ipamdv1.Wiring{ipamdv1.Wiring_WIRING_MAIN_PLUGIN, ipamdv1.Wiring_WIRING_IPAM_ONLY, 9} {
		req := addReq("seed-wiring")
		req.Wiring = w
		seed(wire.MethodAdd, req)
	}
	seed(wire.MethodDel, &ipamdv1.DelRequest{Attachment: attachment("seed")})
	seed(wire.MethodCheck, &ipamdv1.CheckRequest{Attachment: attachment("seed")})
	seed(wire.MethodGC, &ipamdv1.GCRequest{Network: "testnet"})
	seed(wire.MethodStatus, &ipamdv1.StatusRequest{})
	f.Add(uint8(0), []byte{})
	f.Add(uint8(200), []byte{0x0a, 0xff})

	h := newHarness(f, "198.18.0.0/24")
	handler := h.srv.WireHandler()
	f.Fuzz(func(t *testing.T, method uint8, payload []byte) {
		before := h.store.Stats().Assigned
		resp, err := handler(context.Background(), wire.Method(method), payload)
		var werr *wire.Error
		if err != nil && !errors.As(err, &werr) {
			t.Fatalf("error %v is not a *wire.Error", err)
		}
		after := h.store.Stats().Assigned
		if wire.Method(method) == wire.MethodAdd {
			if err != nil && after != before {
				t.Fatalf("failed Add (%v) changed assigned %d -> %d", err, before, after)
			}
			if err == nil {
				var add ipamdv1.AddResponse
				if uerr := proto.Unmarshal(resp, &add); uerr != nil || len(add.Ips) != 1 {
					t.Fatalf("successful Add answered %x (%v)", resp, uerr)
				}
				// Give the address back so the pool never runs dry.
				var req ipamdv1.AddRequest
				_ = proto.Unmarshal(payload, &req)
				if _, _, rerr := h.store.Release(context.Background(), keyOf(req.GetAttachment())); rerr != nil {
					t.Fatal(rerr)
				}
			}
		} else if after > before {
			t.Fatalf("method %d assigned an address", method)
		}
	})
}

// FuzzAddValidation: an Add request the validator rejects is
// InvalidArgument and assigns nothing; one it accepts gets an address.
func FuzzAddValidation(f *testing.F) {
	f.Add("testnet", "0123456789abcdef", "eth0", "/var/run/netns/x", "pod", "ns", "uid")
	f.Add("", "", "", "", "", "", "")
	f.Add("n", "s", "eth0/x", "rel", "p", "n", "u")
	f.Add("n", "s\x7f", "..", "/", "p", "n", "u")
	h := newHarness(f, "198.18.0.0/24")
	f.Fuzz(func(t *testing.T, network, sandbox, ifname, netns, name, namespace, uid string) {
		req := &ipamdv1.AddRequest{
			Attachment: &ipamdv1.Attachment{Network: network, SandboxId: sandbox, Ifname: ifname},
			Netns:      netns, Pod: &ipamdv1.PodRef{Name: name, Namespace: namespace, Uid: uid},
		}
		before := h.store.Stats().Assigned
		resp, err := h.srv.Add(context.Background(), req)
		after := h.store.Stats().Assigned
		if err != nil {
			if after != before {
				t.Fatalf("rejected Add (%v) changed assigned %d -> %d", err, before, after)
			}
			return
		}
		if len(resp.Ips) != 1 || after > before+1 {
			t.Fatalf("Add = %v, assigned %d -> %d", resp, before, after)
		}
		if _, _, err := h.store.Release(context.Background(), keyOf(req.Attachment)); err != nil {
			t.Fatal(err)
		}
	})
}
