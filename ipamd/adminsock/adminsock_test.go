package adminsock_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/sandboxipam/sandboxipam/ipamd/adminsock"
	"github.com/sandboxipam/sandboxipam/ipamd/server"
)

// The kernel's credentials of a real connection reach the handler: this
// process's uid and pid, and it is served (it is ipamd's own uid).
func TestServesOwnUIDWithItsCredentials(t *testing.T) {
	path := filepath.Join(t.TempDir(), "admin.sock")
	l, err := server.Listen(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	var got adminsock.Peer
	var ok bool
	s := adminsock.Serve(l, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, ok = adminsock.FromContext(r.Context())
		_, _ = io.WriteString(w, "served")
	}), nil)
	t.Cleanup(func() { _ = s.Shutdown(context.Background()) })
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("admin socket mode = %v, %v; want 0600", fi.Mode(), err)
	}
	c := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", path)
	}}}
	resp, err := c.Get("http://admin/x")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || !ok || got.UID != uint32(os.Geteuid()) || got.PID != int32(os.Getpid()) {
		t.Fatalf("answer %d, peer %+v (%v); want 200 and uid %d pid %d", resp.StatusCode, got, ok, os.Geteuid(), os.Getpid())
	}
	if !s.Allowed(adminsock.Peer{UID: 0}) || s.Allowed(adminsock.Peer{UID: uint32(os.Geteuid()) + 1}) {
		t.Error("Allowed must admit root and refuse any other uid than ipamd's")
	}
}

func TestPeerOfTCPConnectionIsNoPeer(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := adminsock.PeerOf(c); !errors.Is(err, adminsock.ErrNoPeer) {
		t.Fatalf("PeerOf(tcp) = %v, want ErrNoPeer", err)
	}
}
