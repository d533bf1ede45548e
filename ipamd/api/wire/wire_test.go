package wire_test

import (
	"bytes"
	"context"
	"errors"
	"net"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	ipamdv1 "github.com/sandboxipam/sandboxipam/ipamd/api/v1"
	"github.com/sandboxipam/sandboxipam/ipamd/api/wire"
	"github.com/sandboxipam/sandboxipam/ipamd/api/wire/wireproto"
	"github.com/sandboxipam/sandboxipam/ipamd/server"
)

// echoHandler answers Add with the sandbox ID turned into an address
// field, and everything else with NotFound, so both paths are visible.
func echoHandler(_ context.Context, m wire.Method, payload []byte) ([]byte, error) {
	if m != wire.MethodAdd {
		return nil, &wire.Error{Code: wire.CodeNotFound, Message: "no " + m.String()}
	}
	var req ipamdv1.AddRequest
	if err := proto.Unmarshal(payload, &req); err != nil {
		return nil, &wire.Error{Code: wire.CodeInvalidArgument, Message: err.Error()}
	}
	return proto.Marshal(&ipamdv1.AddResponse{Ips: []*ipamdv1.IPConfig{{Address: "198.18.0.2/24", Gateway: req.GetAttachment().GetSandboxId()}}})
}

func startServer(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "ipamd.sock")
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	e := server.Serve(l, echoHandler, nil)
	t.Cleanup(func() { _ = e.Stop(context.Background()) })
	return path
}

func TestClientCallsOneConnectionAfterAnother(t *testing.T) {
	path := startServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	c, err := wire.Dial(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	sandbox := "c32c237fb5293478da938e388f6e22486790facba0d178ff24271829865976cf"
	for i := 0; i < 2; i++ { // two calls on one connection
		var resp ipamdv1.AddResponse
		err := wireproto.Call(ctx, c, wire.MethodAdd, &ipamdv1.AddRequest{Attachment: &ipamdv1.Attachment{SandboxId: sandbox}}, &resp)
		if err != nil {
			t.Fatalf("Add: %v", err)
		}
		if got := resp.GetIps()[0]; got.GetAddress() != "198.18.0.2/24" || got.GetGateway() != sandbox {
			t.Fatalf("Add answered %v", got)
		}
	}
	err = wireproto.Call(ctx, c, wire.MethodDel, &ipamdv1.DelRequest{}, &ipamdv1.DelResponse{})
	var werr *wire.Error
	if !errors.As(err, &werr) || werr.Code != wire.CodeNotFound || werr.Message != "no Del" {
		t.Fatalf("Del error = %v, want *wire.Error NotFound \"no Del\"", err)
	}
}

func TestServerRejectsBadFramingVersion(t *testing.T) {
	path := startServer(t)
	conn, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	frame := []byte(wire.Magic + "\x09\x01\x00\x00\x00\x00")
	if _, err := conn.Write(frame); err != nil {
		t.Fatal(err)
	}
	code, body, err := wire.ReadResponse(conn)
	if err != nil {
		t.Fatal(err)
	}
	if code != wire.CodeInvalidArgument || !bytes.Contains(body, []byte("framing version 9")) {
		t.Fatalf("got code %d %q, want InvalidArgument naming framing version 9", code, body)
	}
}

func TestCallHonoursContextDeadline(t *testing.T) {
	path := filepath.Join(t.TempDir(), "silent.sock")
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	done := make(chan struct{})
	defer close(done)
	go func() { // accepts and never answers while the test runs
		c, err := l.Accept()
		if err == nil {
			defer c.Close()
			<-done
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	c, err := wire.Dial(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	err = wireproto.Call(ctx, c, wire.MethodStatus, &ipamdv1.StatusRequest{}, &ipamdv1.StatusResponse{})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want context.DeadlineExceeded", err)
	}
}

func TestRequestRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	if err := wire.WriteRequest(&buf, wire.MethodGC, []byte{1, 2, 3}); err != nil {
		t.Fatal(err)
	}
	m, payload, err := wire.ReadRequest(&buf)
	if err != nil || m != wire.MethodGC || !bytes.Equal(payload, []byte{1, 2, 3}) {
		t.Fatalf("got %v %v %v", m, payload, err)
	}
}

// FuzzReadRequest: any bytes either decode to a frame that re-encodes to
// the same bytes, or give an error; never a panic or a huge allocation.
func FuzzReadRequest(f *testing.F) {
	var ok bytes.Buffer
	_ = wire.WriteRequest(&ok, wire.MethodAdd, []byte("payload"))
	f.Add(ok.Bytes())
	f.Add([]byte(wire.Magic + "\x01\x01\xff\xff\xff\xff"))
	f.Add([]byte("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		m, payload, err := wire.ReadRequest(bytes.NewReader(data))
		if err != nil {
			return
		}
		var again bytes.Buffer
		if err := wire.WriteRequest(&again, m, payload); err != nil {
			t.Fatalf("re-encode: %v", err)
		}
		if !bytes.Equal(again.Bytes(), data[:again.Len()]) {
			t.Fatalf("re-encoded frame differs from input")
		}
	})
}
