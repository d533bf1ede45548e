package daemon

import (
	"context"
	"fmt"
	"log/slog"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sandboxipam/sandboxipam/ipamd/config"
	"github.com/sandboxipam/sandboxipam/ipamd/datastore"
	"github.com/sandboxipam/sandboxipam/ipamd/ipsource"
	"github.com/sandboxipam/sandboxipam/ipamd/ipsource/aws"
	"github.com/sandboxipam/sandboxipam/ipamd/ipsource/podcidr"
	"github.com/sandboxipam/sandboxipam/ipamd/ipsource/pool"
	"github.com/sandboxipam/sandboxipam/ipamd/ipsource/static"
)

// sourceHandle is the running IP source and, for aws, its ENI view.
type sourceHandle struct {
	source ipsource.Source
	// enis renders /v1/enis; nil for sources without ENIs.
	enis func(ctx context.Context) (any, error)
	// podCIDR is the podCIDR source; nil for the others.
	podCIDR *podcidr.Source
	// pool is the pool source; nil for the others.
	pool *pool.Source
	// collectors are the source's own metrics, for ipamd's registry.
	collectors []prometheus.Collector
}

// startSource builds the configured source and fills the pool. The static
// source is done once its addresses are in; a source that keeps adjusting
// the pool (aws) runs on runCtx until Stop.
func startSource(ctx, runCtx context.Context, d *Daemon) (*sourceHandle, error) {
	cfg, store, log, wg := d.cfg, d.store, d.log, &d.wg
	switch cfg.IPSource.Type {
	case config.SourcePodCIDR:
		return startPodCIDR(ctx, runCtx, d, store, wg)
	case config.SourcePool:
		return startPool(ctx, runCtx, d, store, wg)
	case config.SourceStatic:
		scfg, err := static.ParseConfig(cfg.IPSource.StaticPool())
		if err != nil {
			return nil, fmt.Errorf("ipSource.%w", err)
		}
		src, err := static.New(scfg)
		if err != nil {
			return nil, fmt.Errorf("ipSource.static: %w", err)
		}
		if err := src.Run(ctx, store); err != nil {
			return nil, fmt.Errorf("fill the pool from the static source: %w", err)
		}
		log.Info("pool filled", slog.String("source", src.Name()), slog.Uint64("addresses", src.Size()))
		return &sourceHandle{source: src}, nil
	case config.SourceAWS:
		return startAWS(ctx, runCtx, cfg, store, log, wg)
	default:
		return nil, fmt.Errorf("ipSource.type %q is not supported", cfg.IPSource.Type)
	}
}

// startAWS runs the aws source on runCtx and waits, within ctx, for its
// initial fill: ipamd opens its socket only once the pool has addresses
// (or the source has failed, which fails the start).
func startAWS(ctx, runCtx context.Context, cfg config.Config, store *datastore.Store, log *slog.Logger, wg *sync.WaitGroup) (*sourceHandle, error) {
	src, err := aws.New(cfg.IPSource.AWS, cfg.Advanced.AWS, aws.Options{Logger: log.With("component", "ipsource")})
	if err != nil {
		return nil, fmt.Errorf("ipSource.%w", err)
	}
	failed := make(chan error, 1)
	wg.Go(func() {
		if err := src.Run(runCtx, store); err != nil {
			log.Error("aws IP source stopped", slog.Any("error", err))
			failed <- err
		}
	})
	select {
	case <-src.Ready():
	case err := <-failed:
		return nil, fmt.Errorf("start the aws IP source: %w", err)
	case <-ctx.Done():
		return nil, fmt.Errorf("start the aws IP source: %w", context.Cause(ctx))
	}
	enis := func(context.Context) (any, error) {
		return struct {
			Status aws.Status      `json:"status"`
			ENIs   []aws.ENIStatus `json:"enis"`
		}{src.Status(), src.ENIs()}, nil
	}
	return &sourceHandle{source: src, enis: enis, collectors: src.Collectors()}, nil
}
