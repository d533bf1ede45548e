package daemon

import (
	"context"
	"fmt"
	"log/slog"
	"sync"

	"github.com/sandboxipam/sandboxipam/cluster/api/ipamdlease"
	"github.com/sandboxipam/sandboxipam/ipamd/aliveness"
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
	var src *pool.Source
	alive, err := listenAlive(d, func() ipamdlease.Alive { return aliveAnswer(src.Status()) })
	if err != nil {
		return nil, err
	}
	src, err = pool.New(d.cfg.IPSource.Pool, d.cfg.IPSource.NodeName, client, client.Dynamic, store,
		pool.Options{Logger: d.log.With("component", "ipsource"), OnChange: d.sourceChanged, Now: d.opts.PoolNow,
			LeaseClock: d.opts.PoolLeaseClock, AliveAddresses: alive.Addresses()})
	if err != nil {
		alive.Close()
		return nil, fmt.Errorf("ipSource.pool: %w", err)
	}
	wg.Go(func() { alive.Serve(runCtx) })
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

// listenAlive binds the alive answer on alive.hosts (package aliveness),
// before the pool source is made, so that the Lease records only
// addresses that answer. With no hosts it binds nothing.
func listenAlive(d *Daemon, answer aliveness.Answer) (*aliveness.Server, error) {
	s, err := aliveness.Listen(d.cfg.Alive.Addresses(), answer, d.log.With("component", "alive"))
	if err != nil {
		return nil, fmt.Errorf("alive.hosts and alive.port: %w", err)
	}
	return s, nil
}

// aliveAnswer is the alive answer from the pool source's view.
func aliveAnswer(st pool.Status) ipamdlease.Alive {
	return ipamdlease.Alive{Node: st.Node, NodeUID: st.UID, Blocks: st.Blocks}
}
