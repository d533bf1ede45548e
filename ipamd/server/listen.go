package server

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/sandboxipam/sandboxipam/ipamd/api/v1/ipamdgrpc"
	"github.com/sandboxipam/sandboxipam/ipamd/api/wire"
	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// ErrSocketInUse: another process already serves the socket path.
var ErrSocketInUse = errors.New("socket is served by another process")

// Listen creates the unix socket at path, owner-only (0600). A missing
// parent directory is created 0700. A stale socket left by a crash is
// removed; a live one (something answers) is ErrSocketInUse, and a path
// that is not a socket is never removed.
func Listen(ctx context.Context, path string) (*net.UnixListener, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("socket directory: %w", err)
	}
	if err := removeStale(ctx, path); err != nil {
		return nil, err
	}
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", path, err)
	}
	// The directory is 0700 when ipamd made it, so the moment between
	// bind and chmod exposes nothing there; chmod covers a shared one.
	if err := os.Chmod(path, 0o600); err != nil {
		l.Close()
		return nil, fmt.Errorf("restrict socket %s to its owner: %w", path, err)
	}
	return l, nil
}

func removeStale(ctx context.Context, path string) error {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("stat socket %s: %w", path, err)
	}
	if fi.Mode().Type() != fs.ModeSocket {
		return fmt.Errorf("socket path %s exists and is not a socket; not removing it", path)
	}
	dctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	var d net.Dialer
	if conn, err := d.DialContext(dctx, "unix", path); err == nil {
		conn.Close()
		return fmt.Errorf("%s: %w", path, ErrSocketInUse)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove stale socket %s: %w", path, err)
	}
	return nil
}

// Endpoint serves a Server on one listener, gRPC (with the standard health
// service) and the wire framing side by side.
type Endpoint struct {
	splitter *wire.Splitter
	grpc     *grpc.Server
	health   *health.Server
	log      *slog.Logger
	done     chan struct{}
	errMu    sync.Mutex
	err      error
}

// Serve starts serving srv on l and returns at once. Stop ends it.
func Serve(l net.Listener, srv *Server, logger *slog.Logger) *Endpoint {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	e := &Endpoint{
		splitter: wire.NewSplitter(l, srv.WireHandler(), logger),
		grpc:     grpc.NewServer(),
		health:   health.NewServer(),
		log:      logger,
		done:     make(chan struct{}),
	}
	ipamdgrpc.RegisterIPAMServer(e.grpc, srv)
	healthpb.RegisterHealthServer(e.grpc, e.health)
	e.health.SetServingStatus(ipamdgrpc.IPAM_ServiceDesc.ServiceName, healthpb.HealthCheckResponse_SERVING)

	var wg sync.WaitGroup
	wg.Go(func() { e.record(e.grpc.Serve(e.splitter.GRPCListener())) })
	wg.Go(func() { e.record(e.splitter.Serve()) })
	go func() { wg.Wait(); close(e.done) }()
	return e
}

func (e *Endpoint) record(err error) {
	if err == nil || errors.Is(err, grpc.ErrServerStopped) || errors.Is(err, net.ErrClosed) {
		return
	}
	e.log.Error("CNI API socket stopped serving", slog.Any("error", err))
	e.errMu.Lock()
	defer e.errMu.Unlock()
	if e.err == nil {
		e.err = err
	}
}

// Stop refuses new connections, lets calls in flight finish until ctx is
// done, then closes everything. It returns the first serving error.
func (e *Endpoint) Stop(ctx context.Context) error {
	e.health.Shutdown()
	stopped := make(chan struct{})
	go func() { e.grpc.GracefulStop(); close(stopped) }()
	select {
	case <-stopped:
	case <-ctx.Done():
		e.grpc.Stop()
		<-stopped
	}
	if err := e.splitter.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
		e.record(err)
	}
	<-e.done
	e.errMu.Lock()
	defer e.errMu.Unlock()
	return e.err
}
