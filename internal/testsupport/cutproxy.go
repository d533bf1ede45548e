package testsupport

import (
	"io"
	"net"
	"sync"
	"testing"
)

// CutProxy is a TCP proxy on loopback that a test can cut and heal: a
// client that reaches a server through it (ipamd's API client, say) is
// partitioned from that server on Cut, as by a network failure, while
// the test itself still reaches the server directly.
type CutProxy struct {
	l      net.Listener
	target string
	mu     sync.Mutex
	cut    bool
	conns  map[net.Conn]struct{}
}

// StartCutProxy proxies a new loopback port to target until the test ends.
func StartCutProxy(t testing.TB, target string) *CutProxy {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &CutProxy{l: l, target: target, conns: map[net.Conn]struct{}{}}
	go p.serve()
	t.Cleanup(func() {
		l.Close()
		p.Cut()
	})
	return p
}

// Addr is the proxy's "127.0.0.1:port".
func (p *CutProxy) Addr() string { return p.l.Addr().String() }

// Cut closes every proxied connection and refuses new ones until Heal.
func (p *CutProxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = true
	for c := range p.conns {
		c.Close()
	}
	clear(p.conns)
}

// Heal lets connections through again.
func (p *CutProxy) Heal() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = false
}

func (p *CutProxy) serve() {
	for {
		c, err := p.l.Accept()
		if err != nil {
			return
		}
		go p.pipe(c)
	}
}

// pipe joins c to a new connection to the target, unless cut.
func (p *CutProxy) pipe(c net.Conn) {
	p.mu.Lock()
	cut := p.cut
	p.mu.Unlock()
	if cut {
		c.Close()
		return
	}
	up, err := net.Dial("tcp", p.target)
	if err != nil {
		c.Close()
		return
	}
	if !p.track(c, up) {
		return
	}
	go func() {
		_, _ = io.Copy(up, c)
		up.Close()
	}()
	_, _ = io.Copy(c, up)
	c.Close()
}

// track records both ends so Cut closes them; a Cut that came meanwhile
// closes them now.
func (p *CutProxy) track(conns ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cut {
		for _, c := range conns {
			c.Close()
		}
		return false
	}
	for _, c := range conns {
		p.conns[c] = struct{}{}
	}
	return true
}
