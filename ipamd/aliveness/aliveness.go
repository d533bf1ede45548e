// Package aliveness is ipamd's answer to the reclaimer's second channel:
// on the node's own addresses (recorded in ipamd's Lease, annotation
// ipamdlease.LeaseAddressesAnnotation), a GET of ipamdlease.AlivePath
// returns this node's name, its Node's UID and the blocks ipamd holds.
//
// A Lease says only that the API server cannot hear a node. A node cut off
// from the API server but not from the other nodes still runs its pods on
// its blocks' addresses; the reclaimer asks here, over the data plane, and
// keeps the blocks while this answers (package cluster/reclaim, condition
// (e)).
//
// The answer is read-only and unauthenticated on purpose: it changes
// nothing, it tells nothing the IPBlocks do not already tell, and a
// forged answer can only keep a block longer (the reclaimer never takes
// an answer as evidence of death). It binds the node's addresses, not
// loopback, since the reclaimer runs in a pod elsewhere.
package aliveness

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"time"

	"github.com/sandboxipam/sandboxipam/cluster/api/ipamdlease"
)

// Server serves the alive answer on one or more addresses.
type Server struct {
	srv *http.Server
	lns []net.Listener
	log *slog.Logger
}

// Answer returns what the alive answer says now.
type Answer func() ipamdlease.Alive

// Listen binds every address (all or none) and returns a Server that
// serves answer once Serve is called. An address that cannot be bound is
// an error naming it.
func Listen(addrs []netip.AddrPort, answer Answer, log *slog.Logger) (*Server, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Server{log: log}
	for _, a := range addrs {
		ln, err := net.Listen("tcp", a.String())
		if err != nil {
			s.closeListeners()
			return nil, fmt.Errorf("alive: listen on %s: %w", a, err)
		}
		s.lns = append(s.lns, ln)
	}
	mux := http.NewServeMux()
	mux.Handle("GET "+ipamdlease.AlivePath, Handler(answer))
	s.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 5 * time.Second,
		WriteTimeout: 5 * time.Second, IdleTimeout: 30 * time.Second, MaxHeaderBytes: 8 << 10}
	return s, nil
}

// Addresses are the addresses bound, in the order given (a port 0 given
// is the port the kernel chose).
func (s *Server) Addresses() []netip.AddrPort {
	out := make([]netip.AddrPort, 0, len(s.lns))
	for _, ln := range s.lns {
		out = append(out, ln.Addr().(*net.TCPAddr).AddrPort())
	}
	return out
}

// Serve answers on every address until ctx ends, then shuts down.
func (s *Server) Serve(ctx context.Context) {
	done := make(chan struct{})
	for _, ln := range s.lns {
		go func() {
			if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				s.log.Error("alive answer stopped on one address", slog.String("address", ln.Addr().String()), slog.Any("error", err))
			}
			done <- struct{}{}
		}()
	}
	<-ctx.Done()
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	_ = s.srv.Shutdown(sctx)
	for range s.lns {
		<-done
	}
}

func (s *Server) closeListeners() {
	for _, ln := range s.lns {
		ln.Close()
	}
}

// Handler serves answer as JSON. It only reads.
func Handler(answer Answer) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		a := answer()
		if a.Blocks == nil {
			a.Blocks = []string{}
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		_ = json.NewEncoder(w).Encode(a)
	})
}

// Close closes the listeners of a Server never served.
func (s *Server) Close() { s.closeListeners() }
