package daemon

import (
	"context"
	"fmt"
	"log/slog"
	"sync"

	"github.com/sandboxipam/sandboxipam/ipamd/config"
	"github.com/sandboxipam/sandboxipam/ipamd/datastore"
	"github.com/sandboxipam/sandboxipam/ipamd/ipsource/podcidr"
	"github.com/sandboxipam/sandboxipam/ipamd/kubeclient"
	"github.com/sandboxipam/sandboxipam/ipamd/routes"
)

// The daemon's Kubernetes side: the one client the podCIDR source, the
// pool source and the route keeper share, the podCIDR source's start and
// the route keeper's. (The top-level cluster/ is another thing: the
// cluster-wide components, such as the reclaimer.)

// kube returns the Kubernetes client the podCIDR and pool sources and
// the routes share, made on first use.
func (d *Daemon) kube() (*kubeclient.Client, error) {
	d.kubeOnce.Do(func() {
		if d.opts.Kube != nil {
			d.kubeClient = d.opts.Kube
			return
		}
		kubeconfig := d.cfg.IPSource.PodCIDR.Kubeconfig
		if d.cfg.IPSource.Type == config.SourcePool && d.cfg.IPSource.Pool.Kubeconfig != "" {
			kubeconfig = d.cfg.IPSource.Pool.Kubeconfig
		}
		d.kubeClient, d.kubeErr = kubeclient.New(kubeconfig)
	})
	return d.kubeClient, d.kubeErr
}

// startPodCIDR fills the pool from the checkpoint's record of the Node,
// when it has one, and runs the podCIDR source on runCtx: the CNI socket
// opens without waiting for the API server, and until the Node's
// podCIDRs are known ADD answers "try again later" naming them.
func startPodCIDR(ctx, runCtx context.Context, d *Daemon, store *datastore.Store, wg *sync.WaitGroup) (*sourceHandle, error) {
	client, err := d.kube()
	if err != nil {
		return nil, err
	}
	src, err := podcidr.New(podcidr.Config{NodeName: d.cfg.IPSource.NodeName}, client, store,
		podcidr.Options{Logger: d.log.With("component", "ipsource"), OnChange: d.sourceChanged})
	if err != nil {
		return nil, fmt.Errorf("ipSource.podCIDR: %w", err)
	}
	ok, err := src.Restore(ctx)
	if err != nil {
		return nil, err
	}
	if !ok {
		d.log.Warn("no ranges for this Node in the checkpoint: waiting for its spec.podCIDRs from the API server",
			slog.String("node", d.cfg.IPSource.NodeName))
	}
	wg.Go(func() {
		if err := src.Run(runCtx); err != nil {
			d.log.Error("podCIDR source stopped", slog.Any("error", err))
		}
	})
	return &sourceHandle{podCIDR: src}, nil
}

// startRoutes keeps the routes to other nodes when routes.nodes is set.
func (d *Daemon) startRoutes(runCtx context.Context) error {
	if !d.cfg.Routes.Nodes {
		return nil
	}
	client, err := d.kube()
	if err != nil {
		return fmt.Errorf("routes.nodes: %w", err)
	}
	// In pool mode the other nodes' addresses are in their IPBlocks, not
	// (only) their podCIDRs: route those too.
	k, err := routes.New(routes.Config{NodeName: d.cfg.IPSource.NodeName, Blocks: d.cfg.IPSource.Type == config.SourcePool}, client,
		routes.Options{Logger: d.log.With("component", "routes"), Netlink: d.opts.RoutesNetlink, Dynamic: client.Dynamic})
	if err != nil {
		return err
	}
	d.routes = k
	d.wg.Go(func() {
		if err := k.Run(runCtx); err != nil {
			d.log.Error("routes to other nodes stopped", slog.Any("error", err))
		}
	})
	return nil
}

// sourceChanged is the podCIDR source's OnChange: the pool's ranges changed,
// so readiness (and the conflist) may have too.
func (d *Daemon) sourceChanged() {
	select {
	case d.changed <- struct{}{}:
	default:
	}
}

// announceOnChange re-announces after every change of the pool's ranges.
func (d *Daemon) announceOnChange(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-d.changed:
			d.announce()
		}
	}
}

// Routes is the route keeper, nil unless routes.nodes is set.
func (d *Daemon) Routes() *routes.Keeper { return d.routes }

// PodCIDRSource is the podCIDR IP source, nil for other sources.
func (d *Daemon) PodCIDRSource() *podcidr.Source {
	if d.source == nil {
		return nil
	}
	return d.source.podCIDR
}
