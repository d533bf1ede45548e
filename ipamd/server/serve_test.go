package server_test

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/sandboxipam/sandboxipam/internal/testsupport"
	ipamdv1 "github.com/sandboxipam/sandboxipam/ipamd/api/v1"
	"github.com/sandboxipam/sandboxipam/ipamd/api/wire"
	"github.com/sandboxipam/sandboxipam/ipamd/api/wire/wireproto"
	"github.com/sandboxipam/sandboxipam/ipamd/server"
)

func statusHandler(context.Context, wire.Method, []byte) ([]byte, error) {
	return proto.Marshal(&ipamdv1.StatusResponse{Ready: true, Free: 7})
}

func serveAt(t *testing.T, h server.Handler) (string, *server.Endpoint) {
	t.Helper()
	path := filepath.Join(shortTempDir(t), "ipamd.sock")
	l, err := server.Listen(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	e := server.Serve(l, h, nil)
	t.Cleanup(func() { _ = e.Stop(context.Background()) })
	return path, e
}

// With every descriptor in use, accept fails with EMFILE: the endpoint
// says it is not accepting, backs off, and accepts again once descriptors
// are free, so the connection that waited in the backlog is answered.
func TestAcceptSurvivesDescriptorExhaustion(t *testing.T) {
	path, e := serveAt(t, statusHandler)
	var old syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &old); err != nil {
		t.Fatal(err)
	}
	low := old
	low.Cur = 256
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &low); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Setrlimit(syscall.RLIMIT_NOFILE, &old) })

	var hogs []*os.File
	closeHogs := func() {
		for _, f := range hogs {
			f.Close()
		}
		hogs = nil
	}
	defer closeHogs()
	for {
		f, err := os.Open(os.DevNull)
		if errors.Is(err, syscall.EMFILE) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		hogs = append(hogs, f)
	}
	// One descriptor for the client's socket; none is left for accept.
	hogs[len(hogs)-1].Close()
	hogs = hogs[:len(hogs)-1]
	conn, err := net.Dial("unix", path)
	if err != nil {
		t.Fatalf("dial with one descriptor free: %v", err)
	}
	defer conn.Close()
	testsupport.Eventually(t, "the endpoint to report it is not accepting", func() bool { return !e.Accepting() })

	closeHogs()
	testsupport.Eventually(t, "the endpoint to accept again", e.Accepting)
	req, _ := proto.Marshal(&ipamdv1.StatusRequest{})
	if err := wire.WriteRequest(conn, wire.MethodStatus, req); err != nil {
		t.Fatal(err)
	}
	code, body, err := wire.ReadResponse(conn)
	if err != nil || code != wire.CodeOK {
		t.Fatalf("answer after the descriptors came back: code %d, %v", code, err)
	}
	var st ipamdv1.StatusResponse
	if err := proto.Unmarshal(body, &st); err != nil || st.Free != 7 {
		t.Fatalf("status = %v, %v", &st, err)
	}
}

// A call in flight when Stop begins finishes with its real answer, never
// "canceled": its change may already be committed.
func TestStopLetsCallsInFlightFinish(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	slow := func(ctx context.Context, m wire.Method, p []byte) ([]byte, error) {
		close(entered)
		<-release
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		return statusHandler(ctx, m, p)
	}
	path, e := serveAt(t, slow)
	c, err := wire.Dial(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	answered := make(chan error, 1)
	go func() {
		var st ipamdv1.StatusResponse
		answered <- wireproto.Call(context.Background(), c, wire.MethodStatus, &ipamdv1.StatusRequest{}, &st)
	}()
	<-entered
	stopped := make(chan error, 1)
	go func() { stopped <- e.Stop(context.Background()) }()
	testsupport.Eventually(t, "Stop to refuse new connections", func() bool { return !e.Accepting() })
	if _, err := net.Dial("unix", path); err == nil {
		t.Fatal("a new connection was accepted after Stop began")
	}
	close(release)
	if err := <-answered; err != nil {
		t.Fatalf("call in flight during Stop: %v, want its real answer", err)
	}
	if err := <-stopped; err != nil {
		t.Fatalf("Stop: %v", err)
	}
}

// Stop's deadline bounds a call that never finishes.
func TestStopCancelsCallsPastItsDeadline(t *testing.T) {
	entered := make(chan struct{})
	stuck := func(ctx context.Context, _ wire.Method, _ []byte) ([]byte, error) {
		close(entered)
		<-ctx.Done()
		return nil, ctx.Err()
	}
	path, e := serveAt(t, stuck)
	c, err := wire.Dial(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	go func() {
		_ = wireproto.Call(context.Background(), c, wire.MethodStatus, &ipamdv1.StatusRequest{}, &ipamdv1.StatusResponse{})
	}()
	<-entered
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := e.Stop(ctx); err != nil {
		t.Fatalf("Stop: %v", err)
	}
}
