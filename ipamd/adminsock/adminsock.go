// Package adminsock serves ipamd's calls that change state (an operator's
// release, a reconcile pass on demand) on a unix socket that only the
// node's administrator can use.
//
// Two locks, one behind the other. The socket is created owner-only (0600
// in a 0700 directory, as the CNI socket is: server.Listen), so another
// uid cannot even connect. Behind that, every connection's peer
// credentials are read from the kernel (SO_PEERCRED, taken when the
// caller connected, so they cannot be forged or passed on) and only uid 0
// and ipamd's own effective uid are served; anyone else gets 403 and is
// logged with uid and pid. The second lock holds when an operator widens
// the first (a group-writable directory, the socket bind-mounted into a
// pod). The loopback TCP listener, which any local process and any
// hostNetwork pod can reach, serves reads only (package introspect).
package adminsock

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sandboxipam/sandboxipam/ipamd/introspect/schema"
)

// Peer is the process at the other end of a unix socket connection, as
// the kernel recorded it when that process connected.
type Peer struct {
	UID, GID uint32
	PID      int32
}

// ErrNoPeer: the connection carries no peer credentials (not a unix
// socket), so the caller cannot be identified and is not served.
var ErrNoPeer = errors.New("no peer credentials on the connection")

// PeerOf reads the peer credentials of a unix socket connection.
func PeerOf(c net.Conn) (Peer, error) {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return Peer{}, fmt.Errorf("%w: %T", ErrNoPeer, c)
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return Peer{}, fmt.Errorf("%w: %w", ErrNoPeer, err)
	}
	var cred *unix.Ucred
	var credErr error
	if err := raw.Control(func(fd uintptr) {
		cred, credErr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return Peer{}, fmt.Errorf("%w: %w", ErrNoPeer, err)
	}
	if credErr != nil {
		return Peer{}, fmt.Errorf("%w: SO_PEERCRED: %w", ErrNoPeer, credErr)
	}
	return Peer{UID: cred.Uid, GID: cred.Gid, PID: cred.Pid}, nil
}

type peerKey struct{}

// peerResult is what ConnContext learned about a connection's caller.
type peerResult struct {
	peer Peer
	err  error
}

// FromContext returns the caller of a request served on the admin
// socket; false elsewhere (the TCP listener) or when unidentified.
func FromContext(ctx context.Context) (Peer, bool) {
	r, ok := ctx.Value(peerKey{}).(peerResult)
	return r.peer, ok && r.err == nil
}

// Server serves one handler on the admin socket.
type Server struct {
	srv  *http.Server
	self uint32
	log  *slog.Logger
}

// Serve serves h on l to callers whose uid is 0 or this process's
// effective uid; everyone else gets 403, logged with their uid and pid.
func Serve(l *net.UnixListener, h http.Handler, log *slog.Logger) *Server {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Server{self: uint32(os.Geteuid()), log: log}
	s.srv = &http.Server{
		Handler:           s.guard(h),
		ReadHeaderTimeout: 5 * time.Second,
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			p, err := PeerOf(c)
			return context.WithValue(ctx, peerKey{}, peerResult{peer: p, err: err})
		},
	}
	go func() {
		if err := s.srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("admin socket stopped serving", slog.Any("error", err))
		}
	}()
	return s
}

// Allowed reports whether p may change ipamd's state: root, or the uid
// ipamd runs as.
func (s *Server) Allowed(p Peer) bool { return p.UID == 0 || p.UID == s.self }

func (s *Server) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		res, ok := r.Context().Value(peerKey{}).(peerResult)
		if !ok {
			res.err = ErrNoPeer // never a zero Peer, which would read as root
		}
		if res.err == nil && s.Allowed(res.peer) {
			next.ServeHTTP(w, r)
			return
		}
		msg := fmt.Sprintf("the admin socket serves only uid 0 and ipamd's uid %d; caller uid %d (pid %d) refused", s.self, res.peer.UID, res.peer.PID)
		if res.err != nil {
			msg = "the admin socket serves only identified callers: " + res.err.Error()
		}
		attrs := []any{slog.Uint64("uid", uint64(res.peer.UID)), slog.Uint64("gid", uint64(res.peer.GID)), slog.Int64("pid", int64(res.peer.PID)),
			slog.String("method", r.Method), slog.String("path", r.URL.Path)}
		if res.err != nil {
			attrs = append(attrs, slog.Any("error", res.err))
		}
		s.log.Warn("REFUSED a caller on the admin socket: it is neither root nor ipamd's uid", attrs...)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Connection", "close")
		w.WriteHeader(http.StatusForbidden)
		_ = json.NewEncoder(w).Encode(schema.Error{Error: msg})
	})
}

// Shutdown stops accepting and waits for calls in flight, within ctx.
func (s *Server) Shutdown(ctx context.Context) error {
	if err := s.srv.Shutdown(ctx); err != nil {
		return fmt.Errorf("admin socket: %w", err)
	}
	return nil
}
