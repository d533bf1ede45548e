package pool

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"

	"github.com/sandboxipam/sandboxipam/cluster/api/v1alpha1"
)

// Run starts the informers and compares the pool with the watermarks
// every interval until ctx is done. Call Restore first.
func (s *Source) Run(ctx context.Context) error {
	nodeFactory := informers.NewSharedInformerFactoryWithOptions(s.kube, 0,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("metadata.name", s.nodeName).String()
		}))
	s.nodes = nodeFactory.Core().V1().Nodes().Informer()
	// Every IPPool (a few objects): a CIDR of this pool that overlaps
	// another's is not claimed from (claimable).
	s.pools = dynamicinformer.NewFilteredDynamicInformer(s.dyn, v1alpha1.IPPoolResource, "", 0, cache.Indexers{}, nil).Informer()
	s.blocks = dynamicinformer.NewFilteredDynamicInformer(s.dyn, v1alpha1.IPBlockResource, "", 0, cache.Indexers{},
		s.blockSelector).Informer()
	if _, err := s.blocks.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    s.delivered,
		UpdateFunc: func(_, obj any) { s.delivered(obj) },
	}); err != nil {
		return fmt.Errorf("pool source: watch IPBlocks: %w", err)
	}
	if err := s.blocks.SetWatchErrorHandlerWithContext(s.watchFailed); err != nil {
		return fmt.Errorf("pool source: watch IPBlocks: %w", err)
	}
	stopEvents, err := s.startEvents(ctx)
	if err != nil {
		return err
	}
	defer stopEvents()
	go s.renewer.Run(ctx)
	nodeFactory.Start(ctx.Done())
	defer nodeFactory.Shutdown()
	go s.pools.Run(ctx.Done())
	go s.blocks.Run(ctx.Done())
	tick := s.opts.Tick
	if tick == nil {
		t := time.NewTicker(s.cfg.Interval)
		defer t.Stop()
		tick = t.C
	}
	for {
		s.pass(ctx)
		select {
		case s.passes <- struct{}{}:
		default:
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick:
		}
	}
}

// blockSelector selects this node's IPBlocks by label; a node name too
// long for a label value watches every block (filtered by spec.nodeName).
func (s *Source) blockSelector(o *metav1.ListOptions) {
	if len(validation.IsValidLabelValue(s.nodeName)) == 0 {
		o.LabelSelector = labels.SelectorFromSet(labels.Set{v1alpha1.NodeLabel: s.nodeName}).String()
	}
}

// synced reports whether all three informers have listed once.
func (s *Source) synced() bool {
	return s.nodes.HasSynced() && s.pools.HasSynced() && s.blocks.HasSynced()
}

// node is this Node from the informer, or an error naming what is missing.
func (s *Source) node() (*corev1.Node, error) {
	obj, ok, err := s.nodes.GetStore().GetByKey(s.nodeName)
	if err != nil || !ok {
		return nil, fmt.Errorf("this node's Node %s is not registered", s.nodeName)
	}
	n, _ := obj.(*corev1.Node)
	if n == nil {
		return nil, fmt.Errorf("the informer of Node %s holds a %T", s.nodeName, obj)
	}
	return n, nil
}

// myBlocks lists the IPBlocks of this node's name in the pool, from the
// informer.
func (s *Source) myBlocks() []v1alpha1.IPBlock {
	return s.nodeBlocks(func(b v1alpha1.IPBlock) bool { return b.Spec.Pool == s.cfg.Pool })
}

// strayBlocks lists the IPBlocks of this Node (its name and UID) in
// another pool: the node stopped using that pool (ipSource.pool.pool
// renamed), so collect returns each once no address of it is busy here.
func (s *Source) strayBlocks() []v1alpha1.IPBlock {
	return s.nodeBlocks(func(b v1alpha1.IPBlock) bool {
		return b.Spec.Pool != s.cfg.Pool && s.uid != "" && b.Spec.NodeUID == s.uid
	})
}

// nodeBlocks lists the IPBlocks of this node's name that keep holds, from
// the informer.
func (s *Source) nodeBlocks(keep func(v1alpha1.IPBlock) bool) []v1alpha1.IPBlock {
	var out []v1alpha1.IPBlock
	for _, obj := range s.blocks.GetStore().List() {
		u, _ := obj.(*unstructured.Unstructured)
		if u == nil {
			continue
		}
		b, err := v1alpha1.BlockFrom(u)
		if err != nil {
			s.log.Warn("IPBlock ignored", slog.Any("error", err))
			continue
		}
		if b.Spec.NodeName == s.nodeName && keep(b) {
			out = append(out, b)
		}
	}
	return out
}

// watchFailed forgets every created block the informer has not
// delivered: it lists again, and an IPBlock created and deleted while its
// watch was down is never delivered at all (see Source.unseen).
func (s *Source) watchFailed(ctx context.Context, r *cache.Reflector, err error) {
	s.unseenMu.Lock()
	clear(s.unseen)
	s.unseenMu.Unlock()
	cache.DefaultWatchErrorHandler(ctx, r, err)
}

// delivered notes that the informer has delivered an IPBlock (see
// Source.unseen).
func (s *Source) delivered(obj any) {
	u, _ := obj.(*unstructured.Unstructured)
	if u == nil {
		return
	}
	b, err := v1alpha1.BlockFrom(u)
	if err != nil {
		return
	}
	if p, err := b.Spec.Prefix(); err == nil {
		s.unseenMu.Lock()
		delete(s.unseen, p)
		s.unseenMu.Unlock()
	}
}
