package conformance

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestHungRuntimeAcceptsAndNeverAnswers(t *testing.T) {
	dir, err := os.MkdirTemp("", "conf-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	hung, err := startHungRuntime(filepath.Join(dir, "hung.sock"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(hung.Endpoint(), "unix://"+dir) {
		t.Errorf("Endpoint() = %q", hung.Endpoint())
	}
	conn, err := net.Dial("unix", filepath.Join(dir, "hung.sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Write([]byte("GET /_ping HTTP/1.1\r\nHost: docker\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	// The read can only end by its deadline: nothing is ever sent.
	if err := conn.SetReadDeadline(time.Now().Add(50 * time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	_, err = conn.Read(make([]byte, 1))
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read from the hung runtime = %v, want a deadline error", err)
	}
	if err := hung.Close(); err != nil {
		t.Errorf("Close() = %v", err)
	}
	// Once closed, the connection it held is dropped.
	if err := conn.SetReadDeadline(time.Time{}); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Read(make([]byte, 1)); err == nil {
		t.Error("read after Close succeeded")
	}
}
