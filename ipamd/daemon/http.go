package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/sandboxipam/sandboxipam/ipamd/introspect"
)

// httpServers are the introspection listener and, when it has its own
// address, the metrics listener.
type httpServers struct {
	servers        []*http.Server
	introspectAddr net.Addr
	metricsAddr    net.Addr
}

func (d *Daemon) serveHTTP() (*httpServers, error) {
	deps := introspect.Deps{
		Store: d.store, Source: d.cfg.IPSource.Type, Adapter: d.adapterView,
		Reconcile: d.reconcileNow, ENIs: d.source.enis, Logger: d.log.With("component", "introspect"),
		Ready: d.ready, Check: d.checkNow, Sandboxes: d.sandboxesNow, History: d.history,
	}
	if d.routes != nil {
		deps.Routes = d.routes.Status
	}
	if d.cfg.Metrics.Address == "" {
		deps.Metrics = d.metrics.Handler()
	}
	hs := &httpServers{}
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
	for _, srv := range hs.servers {
		if err := srv.Shutdown(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
