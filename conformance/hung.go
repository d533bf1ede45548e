package conformance

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"sync"
)

// hungRuntime is a unix socket that accepts connections, reads whatever
// arrives and never answers: a runtime that hangs. It is what a deadline is
// for, and what a client without one waits on forever.
type hungRuntime struct {
	listener net.Listener
	wg       sync.WaitGroup

	mu    sync.Mutex
	conns []net.Conn
}

// startHungRuntime listens on path.
func startHungRuntime(path string) (*hungRuntime, error) {
	listener, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("listen for the hung runtime: %w", err)
	}
	h := &hungRuntime{listener: listener}
	h.wg.Add(1)
	go h.accept()
	return h, nil
}

// Endpoint is the socket's URI.
func (h *hungRuntime) Endpoint() string {
	return "unix://" + h.listener.Addr().String()
}

func (h *hungRuntime) accept() {
	defer h.wg.Done()
	for {
		conn, err := h.listener.Accept()
		if err != nil {
			return // closed
		}
		h.mu.Lock()
		h.conns = append(h.conns, conn)
		h.mu.Unlock()
		// Drain so the client's writes never block; answer nothing.
		go func() { _, _ = io.Copy(io.Discard, conn) }()
	}
}

// Close stops listening and drops every connection.
func (h *hungRuntime) Close() error {
	err := h.listener.Close()
	h.wg.Wait()
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, conn := range h.conns {
		_ = conn.Close()
	}
	if errors.Is(err, net.ErrClosed) {
		return nil
	}
	return err
}

// tempDir makes a directory for the check's sockets and records its removal.
func (s *session) tempDir() (string, error) {
	// Unix socket paths are limited to 108 bytes: keep the directory short.
	dir, err := os.MkdirTemp("", "conf-")
	if err != nil {
		return "", fmt.Errorf("make a temporary directory: %w", err)
	}
	s.res.add("directory "+dir, func(context.Context) error { return os.RemoveAll(dir) })
	return dir, nil
}

// unreachableArgs returns the adapter's arguments for an endpoint nobody
// serves, or nil when the Config gives no way to build them.
func (s *session) unreachableArgs() ([]string, error) {
	if s.cfg.UnreachableArgs != nil {
		return s.cfg.UnreachableArgs, nil
	}
	if s.cfg.EndpointArgs == nil {
		return nil, nil
	}
	dir, err := s.tempDir()
	if err != nil {
		return nil, err
	}
	return s.cfg.EndpointArgs("unix://" + filepath.Join(dir, "nobody.sock")), nil
}

// startHung starts a hung runtime in a fresh directory and records its Close.
func (s *session) startHung() (*hungRuntime, error) {
	dir, err := s.tempDir()
	if err != nil {
		return nil, err
	}
	hung, err := startHungRuntime(filepath.Join(dir, "hung.sock"))
	if err != nil {
		return nil, err
	}
	s.res.add("hung runtime socket", func(context.Context) error { return hung.Close() })
	return hung, nil
}
