package wire

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"time"
)

// Handler answers one wire request with the protobuf-encoded response. An
// error that is an *Error sets the response code; any other error is
// reported as CodeInternal.
type Handler func(ctx context.Context, m Method, payload []byte) ([]byte, error)

// sniffTimeout bounds how long an accepted connection may stay silent
// before Split gives up telling its protocol apart.
const sniffTimeout = 5 * time.Second

// Splitter serves one listener for two protocols: connections that open
// with Magic are answered by a Handler, every other connection is handed,
// unread, to the listener that GRPCListener returns.
type Splitter struct {
	listener net.Listener
	handler  Handler
	logger   *slog.Logger
	grpc     *chanListener
	ctx      context.Context
	cancel   context.CancelFunc
	wg       sync.WaitGroup
}

// NewSplitter wraps l. Call Serve to start accepting.
func NewSplitter(l net.Listener, h Handler, logger *slog.Logger) *Splitter {
	if logger == nil {
		logger = slog.Default()
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Splitter{
		listener: l,
		handler:  h,
		logger:   logger,
		grpc:     newChanListener(l.Addr()),
		ctx:      ctx,
		cancel:   cancel,
	}
}

// GRPCListener is the listener a grpc.Server serves.
func (s *Splitter) GRPCListener() net.Listener { return s.grpc }

// Serve accepts connections until the underlying listener is closed (by
// Close). It returns nil after Close.
func (s *Splitter) Serve() error {
	for {
		conn, err := s.listener.Accept()
		if err != nil {
			if s.ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return nil
			}
			return fmt.Errorf("accept on %s: %w", s.listener.Addr(), err)
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.route(conn)
		}()
	}
}

// Close stops accepting, closes the gRPC side's listener and waits for
// wire connections to finish their current request.
func (s *Splitter) Close() error {
	s.cancel()
	err := s.listener.Close()
	s.grpc.Close()
	s.wg.Wait()
	return err
}

func (s *Splitter) route(conn net.Conn) {
	head := make([]byte, len(Magic))
	_ = conn.SetReadDeadline(time.Now().Add(sniffTimeout))
	n, err := io.ReadFull(conn, head)
	_ = conn.SetReadDeadline(time.Time{})
	if err != nil {
		conn.Close()
		return
	}
	replayed := &replayConn{Conn: conn, head: io.MultiReader(bytes.NewReader(head[:n]), conn)}
	if string(head) != Magic {
		if !s.grpc.deliver(s.ctx, replayed) {
			conn.Close()
		}
		return
	}
	s.serveWire(replayed)
}

func (s *Splitter) serveWire(conn net.Conn) {
	defer conn.Close()
	stop := context.AfterFunc(s.ctx, func() { _ = conn.SetReadDeadline(time.Unix(1, 0)) })
	defer stop()
	for {
		method, payload, err := ReadRequest(conn)
		if err != nil {
			if !errors.Is(err, io.EOF) && s.ctx.Err() == nil {
				s.logger.Warn("wire request rejected", "error", err)
				_ = WriteResponse(conn, CodeInvalidArgument, []byte(err.Error()))
			}
			return
		}
		code, body := s.answer(method, payload)
		if err := WriteResponse(conn, code, body); err != nil {
			s.logger.Warn("wire response not delivered", "method", method.String(), "error", err)
			return
		}
	}
}

func (s *Splitter) answer(m Method, payload []byte) (Code, []byte) {
	resp, err := s.handler(s.ctx, m, payload)
	if err == nil {
		return CodeOK, resp
	}
	var werr *Error
	if errors.As(err, &werr) {
		return werr.Code, []byte(werr.Message)
	}
	return CodeInternal, []byte(err.Error())
}

// replayConn gives back the bytes read while sniffing before the rest.
type replayConn struct {
	net.Conn
	head io.Reader
}

func (c *replayConn) Read(p []byte) (int, error) { return c.head.Read(p) }

// chanListener is a net.Listener fed by the splitter.
type chanListener struct {
	addr   net.Addr
	conns  chan net.Conn
	closed chan struct{}
	once   sync.Once
}

func newChanListener(addr net.Addr) *chanListener {
	return &chanListener{addr: addr, conns: make(chan net.Conn), closed: make(chan struct{})}
}

func (l *chanListener) deliver(ctx context.Context, c net.Conn) bool {
	select {
	case l.conns <- c:
		return true
	case <-l.closed:
		return false
	case <-ctx.Done():
		return false
	}
}

func (l *chanListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.closed:
		return nil, net.ErrClosed
	}
}

func (l *chanListener) Close() error {
	l.once.Do(func() { close(l.closed) })
	return nil
}

func (l *chanListener) Addr() net.Addr { return l.addr }
