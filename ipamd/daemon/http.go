package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/sandboxipam/sandboxipam/ipamd/adminsock"
	"github.com/sandboxipam/sandboxipam/ipamd/introspect"
	"github.com/sandboxipam/sandboxipam/ipamd/server"
)

// httpServers are the introspection listener (reads only), the admin
// socket (the calls that change state) and, when it has its own address,
// the metrics listener.
type httpServers struct {
	servers        []*http.Server
	admin          *adminsock.Server
	introspectAddr net.Addr
	metricsAddr    net.Addr
}

func (d *Daemon) serveHTTP(ctx context.Context) (*httpServers, error) {
	deps := introspect.Deps{
		Store: d.store, Source: d.cfg.IPSource.Type, Adapter: d.adapterView,
		Reconcile: d.reconcileNow, Release: d.releaseNow, AdminSocket: d.cfg.AdminSocketPath(),
		ENIs: d.source.enis, Logger: d.log.With("component", "introspect"), OnRefused: d.metrics.ObserveLoopbackRefused,
		Ready: d.ready, Check: d.checkNow, Sandboxes: d.sandboxesNow, History: d.history,
	}
	if d.routes != nil {
		deps.Routes = d.routes.Status
	}
	if d.cfg.Metrics.Address == "" {
		deps.Metrics = d.metrics.Handler()
	}
	hs := &httpServers{}
	// The admin socket opens first: the TCP listener's refusals name it.
	al, err := server.Listen(ctx, d.cfg.AdminSocketPath())
	if err != nil {
		return hs, fmt.Errorf("introspection.adminSocket: %w", err)
	}
	hs.admin = adminsock.Serve(al, introspect.AdminHandler(deps), d.log.With("component", "admin"))
	d.log.Info("admin socket serving release and reconcile to root and ipamd's uid", slog.String("path", d.cfg.AdminSocketPath()))
	addr, err := hs.listen(d.cfg.Introspection.Address, "introspection.address", introspect.Handler(deps), d.log)
	if err != nil {
		return hs, err
	}
	hs.introspectAddr, hs.metricsAddr = addr, addr
	if d.cfg.Metrics.Address != "" {
		mux := http.NewServeMux()
		mux.Handle("GET /metrics", d.metrics.Handler())
		if hs.metricsAddr, err = hs.listen(d.cfg.Metrics.Address, "metrics.address", mux, d.log); err != nil {
			return hs, err
		}
	}
	return hs, nil
}

func (hs *httpServers) listen(addr, field string, h http.Handler, log *slog.Logger) (net.Addr, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", field, addr, err)
	}
	if tcp, ok := l.Addr().(*net.TCPAddr); ok && !tcp.IP.IsLoopback() {
		log.Warn("an HTTP listener binds beyond loopback: every host that reaches it reads what it serves (it changes nothing)",
			slog.String("field", field), slog.String("address", l.Addr().String()))
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	hs.servers = append(hs.servers, srv)
	go func() {
		if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("HTTP listener stopped", slog.String("field", field), slog.Any("error", err))
		}
	}()
	return l.Addr(), nil
}

func (hs *httpServers) shutdown(ctx context.Context) error {
	var errs []error
	if hs.admin != nil {
		errs = append(errs, hs.admin.Shutdown(ctx))
	}
	for _, srv := range hs.servers {
		if err := srv.Shutdown(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
