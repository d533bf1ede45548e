package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sandboxipam/sandboxipam/ipamd/api/wire"
)

// Accept back-off after a temporary error (EMFILE, ENFILE, ENOBUFS): as
// net/http does, wait and try again rather than stop accepting, so a
// moment of descriptor exhaustion never leaves ipamd up but deaf.
const (
	acceptMinBackoff = 5 * time.Millisecond
	acceptMaxBackoff = time.Second
)

// Handler answers one wire request with the protobuf-encoded response. An
// error that is a *wire.Error sets the response code; any other error is
// answered as CodeInternal.
type Handler func(ctx context.Context, m wire.Method, payload []byte) ([]byte, error)

// Endpoint serves the wire framing on one listener: each connection
// carries requests one after another, each answered in turn.
//
// Requests run on a context that shutdown does not cancel: a request that
// has started (an ADD whose assignment may already be committed) is
// answered with its real outcome, never with "canceled". Stop stops
// accepting, lets requests in flight finish until its ctx is done, and
// closes idle connections at once.
type Endpoint struct {
	listener net.Listener
	handler  Handler
	log      *slog.Logger

	accepting atomic.Bool
	// stopping is done once Stop is called: idle connections close, busy
	// ones close after their answer.
	stopping   context.Context
	stopCancel context.CancelFunc
	// reqCtx is cancelled only when Stop's deadline passes.
	reqCtx    context.Context
	reqCancel context.CancelFunc
	conns     sync.WaitGroup
	done      chan struct{}
	errMu     sync.Mutex
	err       error
}

// Serve starts serving h on l and returns at once. Stop ends it.
func Serve(l net.Listener, h Handler, logger *slog.Logger) *Endpoint {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	reqCtx, reqCancel := context.WithCancel(context.Background())
	stopping, stopCancel := context.WithCancel(context.Background())
	e := &Endpoint{listener: l, handler: h, log: logger, stopping: stopping, stopCancel: stopCancel,
		reqCtx: reqCtx, reqCancel: reqCancel, done: make(chan struct{})}
	e.accepting.Store(true)
	go e.acceptLoop()
	return e
}

// Accepting reports whether the socket accepts connections right now:
// false while accept fails (descriptors exhausted) and after Stop.
func (e *Endpoint) Accepting() bool { return e.accepting.Load() }

func (e *Endpoint) acceptLoop() {
	defer close(e.done)
	backoff := time.Duration(0)
	for {
		conn, err := e.listener.Accept()
		if err != nil {
			if e.stopping.Err() != nil {
				e.accepting.Store(false)
				return
			}
			// Every accept error on a unix socket but a closed listener
			// may clear by itself (EMFILE, ENFILE, ENOBUFS, ECONNABORTED).
			if errors.Is(err, net.ErrClosed) {
				e.accepting.Store(false)
				e.record(fmt.Errorf("accept on %s: %w", e.listener.Addr(), err))
				return
			}
			backoff = min(max(2*backoff, acceptMinBackoff), acceptMaxBackoff)
			if e.accepting.Swap(false) {
				e.log.Error("CNI API socket cannot accept connections; retrying", slog.Any("error", err), slog.Duration("retry_in", backoff))
			}
			select {
			case <-time.After(backoff):
			case <-e.stopping.Done():
				return
			}
			continue
		}
		if backoff > 0 {
			e.log.Warn("CNI API socket accepts connections again")
			backoff = 0
		}
		e.accepting.Store(true)
		e.conns.Add(1)
		go func() {
			defer e.conns.Done()
			e.serveConn(conn)
		}()
	}
}

func (e *Endpoint) serveConn(conn net.Conn) {
	defer conn.Close()
	// Stop unblocks a connection waiting for its next request; one in the
	// middle of a request finishes it first (the deadline only affects
	// reads).
	stop := context.AfterFunc(e.stopping, func() { _ = conn.SetReadDeadline(time.Unix(1, 0)) })
	defer stop()
	for {
		method, payload, err := wire.ReadRequest(conn)
		if err != nil {
			if !errors.Is(err, io.EOF) && e.stopping.Err() == nil && !errors.Is(err, net.ErrClosed) {
				e.log.Warn("wire request rejected", slog.Any("error", err))
				_ = wire.WriteResponse(conn, wire.CodeInvalidArgument, []byte(err.Error()))
			}
			return
		}
		code, body := e.answer(method, payload)
		if err := wire.WriteResponse(conn, code, body); err != nil {
			e.log.Warn("wire response not delivered", slog.String("method", method.String()), slog.Any("error", err))
			return
		}
		if e.stopping.Err() != nil {
			return
		}
	}
}

func (e *Endpoint) answer(m wire.Method, payload []byte) (wire.Code, []byte) {
	resp, err := e.handler(e.reqCtx, m, payload)
	if err == nil {
		return wire.CodeOK, resp
	}
	var werr *wire.Error
	if errors.As(err, &werr) {
		return werr.Code, []byte(werr.Message)
	}
	return wire.CodeInternal, []byte(err.Error())
}

func (e *Endpoint) record(err error) {
	e.log.Error("CNI API socket stopped serving", slog.Any("error", err))
	e.errMu.Lock()
	defer e.errMu.Unlock()
	if e.err == nil {
		e.err = err
	}
}

// Stop refuses new connections, lets requests in flight finish until ctx
// is done (then cancels them), and returns the first serving error.
func (e *Endpoint) Stop(ctx context.Context) error {
	e.stopCancel()
	e.accepting.Store(false)
	if err := e.listener.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
		e.record(fmt.Errorf("close %s: %w", e.listener.Addr(), err))
	}
	<-e.done
	finished := make(chan struct{})
	go func() { e.conns.Wait(); close(finished) }()
	select {
	case <-finished:
	case <-ctx.Done():
		e.reqCancel()
		<-finished
	}
	e.reqCancel()
	e.errMu.Lock()
	defer e.errMu.Unlock()
	return e.err
}
