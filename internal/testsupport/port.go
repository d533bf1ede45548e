package testsupport

import (
	"fmt"
	"net"
	"sync"
	"testing"
)

// Port is a loopback TCP address reserved for a daemon the test starts
// (and restarts) itself. The test holds a listener on it whenever the
// daemon does not, so that no other process, such as another test's
// daemon asking for port 0, can take the port in between.
//
// The daemon binds the address itself, so the listener must be closed
// just before the daemon starts: Release does that. The window between
// the two is a fork and exec, not the whole test.
type Port struct {
	// Addr is host:port, for the daemon's config.
	Addr string

	mu sync.Mutex
	l  net.Listener
}

// ReservePort listens on an ephemeral loopback port and keeps the listener
// until Release; the test's cleanup closes it.
func ReservePort(t testing.TB) *Port {
	t.Helper()
	p, err := ListenPort()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Release)
	return p
}

// ListenPort is ReservePort for code that has no testing.TB (a scenario
// driven by a context): the caller must Release the port when done.
func ListenPort() (*Port, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("reserve a loopback port: %w", err)
	}
	return &Port{Addr: l.Addr().String(), l: l}, nil
}

// Release closes the test's listener: call it right before starting the
// daemon that binds Addr.
func (p *Port) Release() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.l != nil {
		p.l.Close()
		p.l = nil
	}
}

// Hold takes the port back once the daemon has exited, until the next
// Release. It fails when another process took the port meanwhile.
func (p *Port) Hold() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.l != nil {
		return nil
	}
	l, err := net.Listen("tcp", p.Addr)
	if err != nil {
		return fmt.Errorf("take loopback port %s back: %w", p.Addr, err)
	}
	p.l = l
	return nil
}
