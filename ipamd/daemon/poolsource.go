package daemon

import (
	"context"
	"fmt"
	"log/slog"
	"sync"

	"github.com/sandboxipam/sandboxipam/ipamd/datastore"
	"github.com/sandboxipam/sandboxipam/ipamd/ipsource/pool"
)

// startPool fills the pool from the checkpoint's record of the claimed
// blocks, when it has one, and runs the pool source on runCtx: the CNI
// socket opens without waiting for the API server; until a first block is
// claimed ADD answers "try again later" naming the wait.
func startPool(ctx, runCtx context.Context, d *Daemon, store *datastore.Store, wg *sync.WaitGroup) (*sourceHandle, error) {
	client, err := d.kube()
	if err != nil {
		return nil, fmt.Errorf("ipSource.pool: %w", err)
	}
	src, err := pool.New(d.cfg.IPSource.Pool, d.cfg.IPSource.NodeName, client, client.Dynamic, store,
		pool.Options{Logger: d.log.With("component", "ipsource"), OnChange: d.sourceChanged, Now: d.opts.PoolNow,
			LeaseClock: d.opts.PoolLeaseClock})
	if err != nil {
		return nil, fmt.Errorf("ipSource.pool: %w", err)
	}
	ok, err := src.Restore(ctx)
	if err != nil {
		return nil, err
	}
	if !ok {
		d.log.Warn("no block of the IPPool in the checkpoint: waiting for a first claim through the API server",
			slog.String("pool", d.cfg.IPSource.Pool.Pool), slog.String("node", d.cfg.IPSource.NodeName))
	}
	wg.Go(func() {
		if err := src.Run(runCtx); err != nil {
			d.log.Error("pool IP source stopped", slog.Any("error", err))
		}
	})
	return &sourceHandle{pool: src}, nil
}

// PoolSource is the pool IP source, nil for other sources.
func (d *Daemon) PoolSource() *pool.Source {
	if d.source == nil {
		return nil
	}
	return d.source.pool
}
