package reclaim

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	coordinationlisters "k8s.io/client-go/listers/coordination/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"

	"github.com/sandboxipam/sandboxipam/cluster/api/ipamdlease"
	"github.com/sandboxipam/sandboxipam/cluster/api/v1alpha1"
)

// Clients are the API clients the reclaimer uses.
type Clients struct {
	Kube    kubernetes.Interface
	Dynamic dynamic.Interface
}

// Options are a reclaimer's configuration and surroundings.
type Options struct {
	Config Config
	// Identity names this reclaimer: in the leader Lease, the Events and
	// the logs. Required.
	Identity string
	// Clock is the reclaimer's time; the real clock when nil (tests pass a
	// fake one and step it).
	Clock clock.WithTicker
	// Logger gets one line per reclaim with its evidence; slog.Default()
	// when nil.
	Logger *slog.Logger
	// OnPass, when set, is called after each pass (tests wait on it).
	OnPass func(Pass)
	// BeforeDelete, when set, is called with a block's name after its
	// reclaim was confirmed and right before the delete is sent: a test
	// holds a delete in flight with it (issue 44: the delete must fail
	// once the node's ipamd lifted its fence meanwhile).
	BeforeDelete func(ctx context.Context, block string)
}

// Reclaimer returns dead nodes' blocks on evidence and runs the cluster
// check. Create it with New; Start it, then RunOnce or Loop.
type Reclaimer struct {
	opts    Options
	cfg     Config
	clients Clients
	clock   clock.WithTicker
	log     *slog.Logger
	leases  *leaseWatch
	// ipamdSeen is what has been seen of ipamd's own Leases, by name.
	ipamdSeen *leaseWatch
	// alive is what gone nodes' ipamds said on the data plane (alive.go).
	alive *aliveWatch
	// returned keeps asking the nodes reclaimed from (returned.go).
	returned *returnWatch
	metrics  *Metrics
	// last is the last pass, for Decisions.
	last atomic.Pointer[Pass]

	factory      informers.SharedInformerFactory
	leaseFactory informers.SharedInformerFactory
	ipamdFactory informers.SharedInformerFactory
	dynFactory   dynamicinformer.DynamicSharedInformerFactory
	nodes        corelisters.NodeLister
	pods         corelisters.PodLister
	nodeLeases   coordinationlisters.LeaseNamespaceLister
	ipamdLeases  coordinationlisters.LeaseNamespaceLister
	blocks       cache.GenericLister
	pools        cache.GenericLister
	synced       []cache.InformerSynced
}

// New builds a reclaimer and its informers; nothing is read until Start.
func New(c Clients, opts Options) (*Reclaimer, error) {
	if err := opts.Config.Validate(); err != nil {
		return nil, fmt.Errorf("reclaimer config: %w", err)
	}
	if opts.Identity == "" {
		return nil, errors.New("reclaimer: Options.Identity is required")
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	r := &Reclaimer{opts: opts, cfg: opts.Config, clients: c, clock: opts.Clock, log: opts.Logger,
		leases: newLeaseWatch(opts.Clock), ipamdSeen: newLeaseWatch(opts.Clock), metrics: NewMetrics(),
		alive: newAliveWatch(opts.Clock, opts.Config.AliveTimeout), returned: newReturnWatch()}
	r.factory = informers.NewSharedInformerFactory(c.Kube, 0)
	r.leaseFactory = informers.NewSharedInformerFactoryWithOptions(c.Kube, 0, informers.WithNamespace(corev1.NamespaceNodeLease))
	r.dynFactory = dynamicinformer.NewDynamicSharedInformerFactory(c.Dynamic, 0)
	nodes, pods := r.factory.Core().V1().Nodes(), r.factory.Core().V1().Pods()
	if err := pods.Informer().SetTransform(slimPod); err != nil {
		return nil, fmt.Errorf("reclaimer: pod informer: %w", err)
	}
	leases := r.leaseFactory.Coordination().V1().Leases()
	if _, err := leases.Informer().AddEventHandler(leaseHandler(r.leases, kubeletLeaseKey)); err != nil {
		return nil, fmt.Errorf("reclaimer: lease informer: %w", err)
	}
	ipamdLeases, err := r.watchIpamdLeases(c.Kube)
	if err != nil {
		return nil, err
	}
	blocks, pools := r.dynFactory.ForResource(v1alpha1.IPBlockResource), r.dynFactory.ForResource(v1alpha1.IPPoolResource)
	r.nodes, r.pods, r.nodeLeases = nodes.Lister(), pods.Lister(), leases.Lister().Leases(corev1.NamespaceNodeLease)
	r.blocks, r.pools = blocks.Lister(), pools.Lister()
	r.synced = []cache.InformerSynced{nodes.Informer().HasSynced, pods.Informer().HasSynced, leases.Informer().HasSynced,
		ipamdLeases.HasSynced, blocks.Informer().HasSynced, pools.Informer().HasSynced}
	return r, nil
}

// Metrics are the reclaimer's metrics, for /metrics.
func (r *Reclaimer) Metrics() *Metrics { return r.metrics }

// Start starts the informers and waits, bounded by ctx, until their
// caches hold a full list. They stop when ctx ends.
func (r *Reclaimer) Start(ctx context.Context) error {
	r.factory.Start(ctx.Done())
	r.leaseFactory.Start(ctx.Done())
	r.ipamdFactory.Start(ctx.Done())
	r.dynFactory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), r.synced...) {
		return fmt.Errorf("reclaimer: informer caches not synced: %w", context.Cause(ctx))
	}
	return nil
}

// Loop runs a pass every Config.Interval and the cluster check every
// Config.CheckInterval, by the reclaimer's clock, until ctx ends.
func (r *Reclaimer) Loop(ctx context.Context) {
	var nextCheck time.Time
	for {
		if now := r.clock.Now(); !now.Before(nextCheck) {
			r.Check()
			nextCheck = now.Add(r.cfg.CheckInterval)
		}
		p := r.RunOnce(ctx)
		if r.opts.OnPass != nil {
			r.opts.OnPass(p)
		}
		select {
		case <-ctx.Done():
			return
		case <-r.clock.After(r.cfg.Interval):
		}
	}
}

// watchIpamdLeases makes the informer of ipamd's own Leases, in
// Config.IpamdLeaseNamespace, observed into r.ipamdSeen by name.
func (r *Reclaimer) watchIpamdLeases(kube kubernetes.Interface) (cache.SharedIndexInformer, error) {
	r.ipamdFactory = informers.NewSharedInformerFactoryWithOptions(kube, 0, informers.WithNamespace(r.cfg.IpamdLeaseNamespace))
	leases := r.ipamdFactory.Coordination().V1().Leases()
	inf := leases.Informer()
	if _, err := inf.AddEventHandler(leaseHandler(r.ipamdSeen, ipamdLeaseKey)); err != nil {
		return nil, fmt.Errorf("reclaimer: ipamd lease informer: %w", err)
	}
	r.ipamdLeases = leases.Lister().Leases(r.cfg.IpamdLeaseNamespace)
	return inf, nil
}

// kubeletLeaseKey keys a kubelet's Lease by its name, the node's;
// ipamdLeaseKey keeps only ipamd's Leases, by name.
func kubeletLeaseKey(l *coordinationv1.Lease) (string, bool) { return l.Name, true }

func ipamdLeaseKey(l *coordinationv1.Lease) (string, bool) {
	return l.Name, strings.HasPrefix(l.Name, ipamdlease.IpamdLeasePrefix)
}

// leaseHandler observes every change of a Lease into w when it happens,
// so that a renewal between two passes is never missed.
func leaseHandler(w *leaseWatch, key func(*coordinationv1.Lease) (string, bool)) cache.ResourceEventHandler {
	observe := func(obj any, deleted bool) {
		if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = t.Obj
		}
		l, ok := obj.(*coordinationv1.Lease)
		if !ok {
			return
		}
		name, ok := key(l)
		switch {
		case !ok:
		case deleted:
			w.observe(name, nil)
		default:
			w.observe(name, l)
		}
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { observe(obj, false) },
		UpdateFunc: func(_, obj any) { observe(obj, false) },
		DeleteFunc: func(obj any) { observe(obj, true) },
	}
}

// slimPod keeps of a Pod only what the reclaimer and the check read, so
// that the cache of every pod in the cluster stays small.
func slimPod(obj any) (any, error) {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return obj, nil
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: p.Name, UID: p.UID, ResourceVersion: p.ResourceVersion},
		Spec:       corev1.PodSpec{NodeName: p.Spec.NodeName, HostNetwork: p.Spec.HostNetwork},
		Status:     corev1.PodStatus{Phase: p.Status.Phase, PodIPs: p.Status.PodIPs},
	}, nil
}
