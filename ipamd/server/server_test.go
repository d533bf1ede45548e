package server_test

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sandboxipam/sandboxipam/ipamd/api/apierr"
	ipamdv1 "github.com/sandboxipam/sandboxipam/ipamd/api/v1"
	"github.com/sandboxipam/sandboxipam/ipamd/api/wire"
	"github.com/sandboxipam/sandboxipam/ipamd/api/wire/wireproto"
	"github.com/sandboxipam/sandboxipam/ipamd/server"
)

func TestAddDelCheck(t *testing.T) {
	h := newHarness(t, "198.18.0.0/28")
	c := h.srv
	ctx := t.Context()

	a, err := c.Add(ctx, addReq("sandbox-a"))
	if err != nil || len(a.Ips) != 1 || a.Ips[0].Address != "198.18.0.1/28" || a.Ips[0].Gateway != "" {
		t.Fatalf("Add a = %v, %v; want 198.18.0.1/28", a, err)
	}
	b, err := c.Add(ctx, addReq("sandbox-b"))
	if err != nil || b.Ips[0].Address != "198.18.0.2/28" {
		t.Fatalf("Add b = %v, %v; want 198.18.0.2/28", b, err)
	}
	again, err := c.Add(ctx, addReq("sandbox-a"))
	if err != nil || again.Ips[0].Address != "198.18.0.1/28" {
		t.Fatalf("repeated Add a = %v, %v; want the same 198.18.0.1/28", again, err)
	}
	chk, err := c.Check(ctx, &ipamdv1.CheckRequest{Attachment: attachment("sandbox-b")})
	if err != nil || chk.Ips[0].Address != "198.18.0.2/28" {
		t.Fatalf("Check b = %v, %v", chk, err)
	}
	st, err := c.Status(ctx, &ipamdv1.StatusRequest{})
	if err != nil || !st.Ready || st.Free != 12 {
		t.Fatalf("Status = %v, %v; want ready with 12 free", st, err)
	}
	del, err := c.Del(ctx, &ipamdv1.DelRequest{Attachment: attachment("sandbox-a")})
	if err != nil || !del.Released {
		t.Fatalf("Del a = %v, %v; want released", del, err)
	}
	del, err = c.Del(ctx, &ipamdv1.DelRequest{Attachment: attachment("sandbox-a")})
	if err != nil || del.Released {
		t.Fatalf("second Del a = %v, %v; want success, not released", del, err)
	}
	_, err = c.Check(ctx, &ipamdv1.CheckRequest{Attachment: attachment("sandbox-a")})
	if apierr.Code(err) != wire.CodeNotFound {
		t.Fatalf("Check after Del = %v, want NotFound", err)
	}
	if got := h.store.Stats(); got.Assigned != 1 || got.Total != 14 {
		t.Fatalf("Stats = %+v, want 1 assigned of 14", got)
	}
}

func TestGCReleasesOnlyInvalidAttachmentsOfTheNetwork(t *testing.T) {
	h := newHarness(t, "198.18.0.0/28")
	c := h.srv
	ctx := t.Context()
	for _, id := range []string{"keep", "drop-1", "drop-2"} {
		if _, err := c.Add(ctx, addReq(id)); err != nil {
			t.Fatal(err)
		}
	}
	other := addReq("other-net")
	other.Attachment.Network = "othernet"
	if _, err := c.Add(ctx, other); err != nil {
		t.Fatal(err)
	}
	resp, err := c.GC(ctx, &ipamdv1.GCRequest{Network: "testnet",
		Valid: []*ipamdv1.Attachment{{SandboxId: "keep", Ifname: "eth0"}}})
	if err != nil {
		t.Fatalf("GC: %v", err)
	}
	var got []string
	for _, a := range resp.Released {
		got = append(got, a.Network+"/"+a.SandboxId+"/"+a.Ifname)
	}
	if strings.Join(got, ",") != "testnet/drop-1/eth0,testnet/drop-2/eth0" {
		t.Fatalf("GC released %v, want testnet/drop-1/eth0,testnet/drop-2/eth0", got)
	}
	if st := h.store.Stats(); st.Assigned != 2 {
		t.Fatalf("assigned after GC = %d, want 2 (keep, other-net)", st.Assigned)
	}
}

func TestPoolExhaustedIsResourceExhausted(t *testing.T) {
	h := newHarness(t, "198.18.0.0/30") // two usable addresses
	c := h.wireClient()
	ctx := t.Context()
	for _, id := range []string{"a", "b"} {
		if err := wireproto.Call(ctx, c, wire.MethodAdd, addReq(id), &ipamdv1.AddResponse{}); err != nil {
			t.Fatal(err)
		}
	}
	err := wireproto.Call(ctx, c, wire.MethodAdd, addReq("c"), &ipamdv1.AddResponse{})
	var werr *wire.Error
	if !errors.As(err, &werr) || werr.Code != wire.CodeResourceExhausted {
		t.Fatalf("third Add = %v, want CodeResourceExhausted", err)
	}
	var st ipamdv1.StatusResponse
	if err := wireproto.Call(ctx, c, wire.MethodStatus, &ipamdv1.StatusRequest{}, &st); err != nil || st.Ready || st.Message != "address pool exhausted: no free ipv4 address" {
		t.Fatalf("Status = %v, %v; want not ready, pool exhausted", &st, err)
	}
}

func TestInvalidArgumentNamesTheField(t *testing.T) {
	long := strings.Repeat("a", 257)
	cases := []struct {
		name string
		req  *ipamdv1.AddRequest
		want string
	}{
		{"no attachment", &ipamdv1.AddRequest{}, "attachment is missing"},
		{"empty sandbox", &ipamdv1.AddRequest{Attachment: &ipamdv1.Attachment{Network: "n", Ifname: "eth0"}}, "attachment.sandbox_id must not be empty"},
		{"long sandbox", &ipamdv1.AddRequest{Attachment: &ipamdv1.Attachment{Network: "n", SandboxId: long, Ifname: "eth0"}}, "attachment.sandbox_id is 257 bytes, longer than 256"},
		{"unprintable sandbox", &ipamdv1.AddRequest{Attachment: &ipamdv1.Attachment{Network: "n", SandboxId: "ab\x01", Ifname: "eth0"}}, `attachment.sandbox_id "ab\x01" contains the unprintable character U+0001`},
		{"empty network", &ipamdv1.AddRequest{Attachment: &ipamdv1.Attachment{SandboxId: "s", Ifname: "eth0"}}, "attachment.network must not be empty"},
		{"ifname slash", &ipamdv1.AddRequest{Attachment: &ipamdv1.Attachment{Network: "n", SandboxId: "s", Ifname: "eth0/x"}}, `attachment.ifname "eth0/x" contains '/'`},
		{"ifname long", &ipamdv1.AddRequest{Attachment: &ipamdv1.Attachment{Network: "n", SandboxId: "s", Ifname: "abcdefghijklmnop"}}, `attachment.ifname "abcdefghijklmnop" is 16 bytes, longer than 15`},
		{"ifname dot", &ipamdv1.AddRequest{Attachment: &ipamdv1.Attachment{Network: "n", SandboxId: "s", Ifname: "."}}, `attachment.ifname "." is not a valid interface name`},
		{"ifname dotdot", &ipamdv1.AddRequest{Attachment: &ipamdv1.Attachment{Network: "n", SandboxId: "s", Ifname: ".."}}, `attachment.ifname ".." is not a valid interface name`},
		{"ifname empty", &ipamdv1.AddRequest{Attachment: &ipamdv1.Attachment{Network: "n", SandboxId: "s"}}, `attachment.ifname "" must not be empty`},
		{"netns relative", &ipamdv1.AddRequest{Attachment: attachment("s"), Netns: "netns/x"}, `netns "netns/x" must be an absolute path`},
		{"pod name long", &ipamdv1.AddRequest{Attachment: attachment("s"), Pod: &ipamdv1.PodRef{Name: long}}, "pod.name is 257 bytes, longer than 256"},
	}
	h := newHarness(t, "198.18.0.0/28")
	g := h.srv
	w := h.wireClient()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := g.Add(t.Context(), tc.req)
			if werr := apierr.ToWire(err); werr == nil || werr.Code != wire.CodeInvalidArgument || werr.Message != tc.want {
				t.Errorf("Add = %v\nwant InvalidArgument %q", err, tc.want)
			}
			err = wireproto.Call(t.Context(), w, wire.MethodAdd, tc.req, &ipamdv1.AddResponse{})
			var werr *wire.Error
			if !errors.As(err, &werr) || werr.Code != wire.CodeInvalidArgument || werr.Message != tc.want {
				t.Errorf("wire Add = %v\nwant CodeInvalidArgument %q", err, tc.want)
			}
		})
	}
	_, err := g.Del(t.Context(), &ipamdv1.DelRequest{Attachment: &ipamdv1.Attachment{Network: "n", SandboxId: "s", Ifname: "a/b"}})
	if werr := apierr.ToWire(err); werr == nil || werr.Code != wire.CodeInvalidArgument || werr.Message != `attachment.ifname "a/b" contains '/'` {
		t.Errorf("Del = %v", err)
	}
	_, err = g.GC(t.Context(), &ipamdv1.GCRequest{})
	if werr := apierr.ToWire(err); werr == nil || werr.Code != wire.CodeInvalidArgument || werr.Message != "network must not be empty" {
		t.Errorf("GC = %v", err)
	}
	_, err = g.GC(t.Context(), &ipamdv1.GCRequest{Network: "n", Valid: []*ipamdv1.Attachment{{SandboxId: "s", Ifname: ""}}})
	if werr := apierr.ToWire(err); werr == nil || werr.Code != wire.CodeInvalidArgument || werr.Message != `valid[0].ifname "" must not be empty` {
		t.Errorf("GC = %v", err)
	}
	if st := h.store.Stats(); st.Assigned != 0 {
		t.Fatalf("invalid requests assigned %d addresses", st.Assigned)
	}
}

func TestWireUnknownMethodAndGarbage(t *testing.T) {
	h := newHarness(t, "198.18.0.0/28")
	handler := h.srv.WireHandler()
	_, err := handler(t.Context(), wire.Method(99), nil)
	var werr *wire.Error
	if !errors.As(err, &werr) || werr.Code != wire.CodeUnimplemented || werr.Message != "unknown method Method(99)" {
		t.Fatalf("method 99 = %v", err)
	}
	_, err = handler(t.Context(), wire.MethodAdd, []byte{0xff, 0xff, 0xff})
	if !errors.As(err, &werr) || werr.Code != wire.CodeInvalidArgument || !strings.HasPrefix(werr.Message, "decode Add request: ") {
		t.Fatalf("garbage Add = %v", err)
	}
}

func TestSocketIsOwnerOnly(t *testing.T) {
	h := newHarness(t, "198.18.0.0/28")
	fi, err := os.Stat(h.socket)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Type() != os.ModeSocket || fi.Mode().Perm() != 0o600 {
		t.Errorf("socket mode = %v, want a socket with 0600", fi.Mode())
	}
	di, err := os.Stat(filepath.Dir(h.socket))
	if err != nil {
		t.Fatal(err)
	}
	if di.Mode().Perm() != 0o700 {
		t.Errorf("socket directory mode = %v, want 0700", di.Mode().Perm())
	}
}

func TestListenRemovesStaleSocketAndRefusesLiveOne(t *testing.T) {
	dir := shortTempDir(t)
	path := filepath.Join(dir, "ipamd.sock")
	stale, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	stale.SetUnlinkOnClose(false)
	stale.Close() // leaves the file behind, as a crash does
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("stale socket file missing: %v", err)
	}
	l, err := server.Listen(t.Context(), path)
	if err != nil {
		t.Fatalf("Listen over a stale socket: %v", err)
	}
	defer l.Close()
	if _, err := server.Listen(t.Context(), path); !errors.Is(err, server.ErrSocketInUse) {
		t.Fatalf("Listen over a live socket = %v, want ErrSocketInUse", err)
	}
	plain := filepath.Join(dir, "file")
	if err := os.WriteFile(plain, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := server.Listen(t.Context(), plain); err == nil || !strings.Contains(err.Error(), "is not a socket") {
		t.Fatalf("Listen over a regular file = %v", err)
	}
}

// A dual-stack pool answers ADD and CHECK with both addresses, IPv4
// first, and STATUS counts the ADDs it can answer: the family with the
// fewest free addresses decides.
func TestDualStackAddCheckStatus(t *testing.T) {
	h := newHarnessCIDRs(t, "198.18.0.0/30", "2001:db8::/64")
	c := h.srv
	ctx := t.Context()
	a, err := c.Add(ctx, addReq("sandbox-a"))
	if err != nil || len(a.Ips) != 2 || a.Ips[0].Address != "198.18.0.1/30" || a.Ips[1].Address != "2001:db8::1/64" {
		t.Fatalf("Add a = %v, %v; want 198.18.0.1/30 and 2001:db8::1/64 (never ::, the subnet-router anycast address)", a, err)
	}
	chk, err := c.Check(ctx, &ipamdv1.CheckRequest{Attachment: attachment("sandbox-a")})
	if err != nil || len(chk.Ips) != 2 || chk.Ips[1].Address != "2001:db8::1/64" {
		t.Fatalf("Check a = %v, %v", chk, err)
	}
	st, err := c.Status(ctx, &ipamdv1.StatusRequest{})
	if err != nil || !st.Ready || st.Free != 1 {
		t.Fatalf("Status = %v, %v; want ready with 1 (IPv4 decides)", st, err)
	}
	if _, err := c.Add(ctx, addReq("sandbox-b")); err != nil {
		t.Fatal(err)
	}
	st, err = c.Status(ctx, &ipamdv1.StatusRequest{})
	if err != nil || st.Ready || st.Free != 0 || st.Message != "address pool exhausted: no free ipv4 address" {
		t.Fatalf("Status = %v, %v; want not ready, no free ipv4 address", st, err)
	}
}
