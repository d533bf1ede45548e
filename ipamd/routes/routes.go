// Package routes keeps the routes between nodes (host-gw, as flannel's
// host-gw backend and kube-router do): in the host's main table, one
// route per other node's spec.podCIDRs via that node's InternalIP of the
// same family, so pods reach pods on other nodes without an overlay. With
// the cluster pool (ipSource.type pool, Config.Blocks) every other node's
// IPBlocks are routed the same way, found by the block's spec.nodeName
// (blocks.go): a node's addresses are then in its blocks, which come and
// go with its pods, so a route follows each block's create and delete.
//
// Every route it makes carries Protocol, a route protocol number of
// ipamd's own. A sync lists the main table's routes of that protocol
// only: it adds and replaces what is missing or wrong and deletes what no
// Node wants any more (a deleted Node, a node whose podCIDRs changed), so
// a restart finds and corrects exactly its own routes, and a route of any
// other protocol (the kernel's, an operator's, another network's) is
// never touched, not even one to the same destination: that destination
// is then reported, not taken over.
//
// A node whose InternalIP is not on a directly connected subnet (the
// kernel's route to it has a gateway, or there is none) cannot be a next
// hop: it is skipped, with an error naming it in the log, in the
// ipamd_node_routes_skipped metric and in Status (ipamctl routes).
//
// Nodes come from a client-go informer over all Nodes, and IPBlocks and
// IPPools from one each over all of them (this is not the CNI path: the
// IP sources read only their own Node and blocks). Only a block of a
// known pool, inside its CIDRs at its block size, is routed; any other is
// skipped and named (blocks.go), since a node's token could write one. A
// sync runs after the informers' first lists, after every Node, IPBlock
// or IPPool event, and every resync interval, to put back a route
// someone deleted.
package routes

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/vishvananda/netlink"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	listersv1 "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/sandboxipam/sandboxipam/cluster/api/v1alpha1"
)

// Protocol is the route protocol (rtm_protocol, "proto" in `ip route`)
// of every route ipamd makes: 201, unassigned in iproute2's rt_protos.
// `ip route show proto 201` lists them.
const Protocol netlink.RouteProtocol = 201

// DefaultResync is how often routes are compared with the Nodes when no
// Node changes.
const DefaultResync = 30 * time.Second

// Config configures the route keeper.
type Config struct {
	// NodeName is this node: no route to its own ranges. Required.
	NodeName string
	// Resync is the time between syncs without a Node event; zero means
	// DefaultResync.
	Resync time.Duration
	// Blocks also routes every other node's IPBlocks of the cluster pool
	// (ipSource.type pool), watched with Options.Dynamic.
	Blocks bool
}

// Options are the non-config inputs.
type Options struct {
	// Netlink is the handle of the network namespace to keep routes in;
	// nil means the namespace of the process (the host's, with
	// hostNetwork).
	Netlink *netlink.Handle
	// Logger; nil discards.
	Logger *slog.Logger
	// Dynamic reaches the IPBlocks; required with Config.Blocks.
	Dynamic dynamic.Interface
}

// Keeper keeps the routes.
type Keeper struct {
	cfg    Config
	client kubernetes.Interface
	dyn    dynamic.Interface
	nl     *netlink.Handle
	log    *slog.Logger
	kick   chan struct{}
	synced chan struct{}

	mu     sync.Mutex
	status Status
	// syncs counts finished syncs, for tests waiting on one.
	syncs    uint64
	syncCond *sync.Cond
}

// New checks cfg; Run keeps the routes.
func New(cfg Config, client kubernetes.Interface, opts Options) (*Keeper, error) {
	if cfg.NodeName == "" {
		return nil, fmt.Errorf("routes.nodes: the node name is empty (ipSource.nodeName, NODE_NAME)")
	}
	if cfg.Resync <= 0 {
		cfg.Resync = DefaultResync
	}
	if cfg.Blocks && opts.Dynamic == nil {
		return nil, fmt.Errorf("routes.nodes: routing the pool's IPBlocks needs a dynamic client")
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	nl := opts.Netlink
	if nl == nil {
		nl = &netlink.Handle{}
	}
	k := &Keeper{cfg: cfg, client: client, dyn: opts.Dynamic, nl: nl, log: opts.Logger,
		kick: make(chan struct{}, 1), synced: make(chan struct{}),
		status: Status{Node: cfg.NodeName, Protocol: int(Protocol), Routes: []Route{}, Skipped: []Skipped{}}}
	k.syncCond = sync.NewCond(&k.mu)
	return k, nil
}

// Run watches all Nodes (and, with Config.Blocks, all IPBlocks and
// IPPools) and keeps
// the routes until ctx is done. The routes stay when it returns: a
// restarted ipamd finds them, and pods keep reaching other nodes
// meanwhile.
func (k *Keeper) Run(ctx context.Context) error {
	factory := informers.NewSharedInformerFactory(k.client, 0)
	nodes := factory.Core().V1().Nodes()
	kick := cache.ResourceEventHandlerFuncs{
		AddFunc: func(any) { k.Kick() }, UpdateFunc: func(any, any) { k.Kick() }, DeleteFunc: func(any) { k.Kick() },
	}
	infs := []cache.SharedIndexInformer{nodes.Informer()}
	var blocks, pools cache.Store
	if k.cfg.Blocks {
		inf := dynamicinformer.NewFilteredDynamicInformer(k.dyn, v1alpha1.IPBlockResource, "", 0, cache.Indexers{}, nil).Informer()
		pinf := dynamicinformer.NewFilteredDynamicInformer(k.dyn, v1alpha1.IPPoolResource, "", 0, cache.Indexers{}, nil).Informer()
		infs, blocks, pools = append(infs, inf, pinf), inf.GetStore(), pinf.GetStore()
	}
	synced := make([]cache.InformerSynced, 0, len(infs))
	for _, inf := range infs {
		if _, err := inf.AddEventHandler(kick); err != nil {
			return fmt.Errorf("routes: %w", err)
		}
		synced = append(synced, inf.HasSynced)
	}
	factory.Start(ctx.Done())
	defer factory.Shutdown()
	for _, inf := range infs[1:] {
		go inf.RunWithContext(ctx)
	}
	if !cache.WaitForCacheSync(ctx.Done(), synced...) {
		return nil
	}
	close(k.synced)
	k.log.Info("informers synced: keeping routes to other nodes' ranges", slog.Int("protocol", int(Protocol)), slog.Bool("ipBlocks", k.cfg.Blocks))
	ticker := time.NewTicker(k.cfg.Resync)
	defer ticker.Stop()
	for {
		k.syncOnce(nodes.Lister(), blocks, pools)
		select {
		case <-ctx.Done():
			return nil
		case <-k.kick:
		case <-ticker.C:
		}
	}
}

// Kick asks for a sync soon.
func (k *Keeper) Kick() {
	select {
	case k.kick <- struct{}{}:
	default:
	}
}

// Synced is closed once the informer has listed the Nodes.
func (k *Keeper) Synced() <-chan struct{} { return k.synced }

// syncOnce syncs with what the informers hold; blocks and pools are nil
// without Config.Blocks. Only valid blocks of known pools are routed
// (poolBlocks).
func (k *Keeper) syncOnce(lister listersv1.NodeLister, blocks, pools cache.Store) {
	all, err := lister.List(everything())
	var st Status
	if err != nil {
		st = Status{Error: fmt.Sprintf("list nodes from the informer: %v", err)}
	} else {
		var bs []v1alpha1.IPBlock
		var bad []Skipped
		if blocks != nil {
			bs, bad = listBlocks(blocks)
			var outside []Skipped
			bs, outside = poolBlocks(bs, listPools(pools))
			bad = append(bad, outside...)
		}
		st = k.Sync(all, bs)
		st.Skipped = append(st.Skipped, bad...)
	}
	k.mu.Lock()
	k.status = st
	k.syncs++
	k.syncCond.Broadcast()
	k.mu.Unlock()
}

// WaitSyncs blocks until at least n syncs have finished since start, or
// ctx is done; tests use it instead of sleeping.
func (k *Keeper) WaitSyncs(ctx context.Context, n uint64) error {
	stop := context.AfterFunc(ctx, func() {
		k.mu.Lock()
		k.syncCond.Broadcast()
		k.mu.Unlock()
	})
	defer stop()
	k.mu.Lock()
	defer k.mu.Unlock()
	for k.syncs < n {
		if err := ctx.Err(); err != nil {
			return err
		}
		k.syncCond.Wait()
	}
	return nil
}

// Collectors are the route keeper's metrics: ipamd_node_routes (routes in
// place) and ipamd_node_routes_skipped (nodes' ranges without a route,
// each logged with the node's name; ipamctl routes lists them).
func (k *Keeper) Collectors() []prometheus.Collector {
	return []prometheus.Collector{
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: "ipamd", Name: "node_routes",
			Help: "Routes to other nodes' podCIDRs (and, in pool mode, IPBlocks) ipamd keeps in the main table (route protocol 201), as the last sync left them."},
			func() float64 { return float64(len(k.Status().Routes)) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: "ipamd", Name: "node_routes_skipped",
			Help: "Other nodes' podCIDRs and IPBlocks without a route: the node (or a block's Node) is gone, its InternalIP is not on a directly connected subnet, it has none of the family, or another protocol's route holds the destination. ipamctl routes names them."},
			func() float64 { return float64(len(k.Status().Skipped)) }),
	}
}

// Syncs counts the finished syncs.
func (k *Keeper) Syncs() uint64 {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.syncs
}

// Status is the last sync's outcome.
func (k *Keeper) Status() Status {
	k.mu.Lock()
	defer k.mu.Unlock()
	return cloneStatus(k.status)
}

func nodeInternalIPs(n *corev1.Node) []string {
	var out []string
	for _, a := range n.Status.Addresses {
		if a.Type == corev1.NodeInternalIP {
			out = append(out, a.Address)
		}
	}
	return out
}
