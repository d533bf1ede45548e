// Package podcidr is the IP source of a cluster whose controller assigns
// each Node its pod ranges: the pool is this node's spec.podCIDRs (one
// range per family), which kube-controller-manager sets with
// --allocate-node-cidrs. Each range follows the static source's rules for
// usable addresses (static.Block).
//
// It reads its one Node through a client-go informer field-selected to
// metadata.name=<node>, as kube-proxy waits for its podCIDR: never a list
// of all Nodes, and never on the CNI path. Until the Node has podCIDRs,
// the pool is empty and waits (Assign fails with datastore.ErrPoolNotReady
// naming the Node; the daemon is not ready and writes no conflist).
//
// The Node's name, UID and podCIDRs go to the checkpoint with the
// assignments (datastore.SetNodeRanges), and a restart fills the pool from
// there before the API server answers: ADD and DEL never need it once the
// ranges are known. spec.podCIDRs only ever goes from empty to set, but a
// Node can be deleted and registered again under its name with another
// range and a new UID; then the new ranges replace the old at once, and an
// old address a live pod holds stays held, in a retiring range that hands
// out nothing, until its pod goes. A deleted Node retires every range: its
// CIDRs go back to the controller, which may give them to another node.
package podcidr

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/sandboxipam/sandboxipam/ipamd/datastore"
)

// Group is the pool group of the podCIDR source's blocks.
const Group = "node"

// retryDelay bounds the wait before a failed write of new ranges (a full
// disk) is tried again.
const retryDelay = 2 * time.Second

// Config is the podCIDR source's configuration.
type Config struct {
	// NodeName is the Node to read. Required.
	NodeName string
}

// Store is what the podCIDR source needs of the datastore: the pool, and
// its record of the Node in the checkpoint.
type Store interface {
	NodeRecord() (datastore.NodeRecord, bool)
	SetNodeRanges(ctx context.Context, nr datastore.NodeRanges) error
	SetPoolWaiting(why string)
}

// Options are the podCIDR source's non-config inputs.
type Options struct {
	// Logger; nil discards.
	Logger *slog.Logger
	// OnChange is called after the pool's ranges changed (the daemon
	// re-announces readiness); nil for none.
	OnChange func()
}

// Status is the source's view for introspection.
type Status struct {
	Node     string   `json:"node"`
	UID      string   `json:"uid,omitempty"`
	PodCIDRs []string `json:"podCIDRs"`
	// Synced: the informer has listed the Node at least once since start.
	Synced bool `json:"synced"`
	// Waiting names what the pool waits for, when it has no range.
	Waiting   string `json:"waiting,omitempty"`
	LastError string `json:"lastError,omitempty"`
}

// Source keeps the pool equal to the Node's podCIDRs.
type Source struct {
	cfg    Config
	client kubernetes.Interface
	store  Store
	opts   Options
	log    *slog.Logger
	// latest holds the newest Node seen (nil after a delete), for apply.
	latest chan nodeEvent
	synced chan struct{}

	mu     sync.Mutex
	status Status
}

type nodeEvent struct {
	node    *corev1.Node
	deleted bool
}

// New checks cfg; Run starts the informer.
func New(cfg Config, client kubernetes.Interface, store Store, opts Options) (*Source, error) {
	if cfg.NodeName == "" {
		return nil, errors.New("podCIDR source: the node name is empty (ipSource.nodeName, NODE_NAME)")
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.OnChange == nil {
		opts.OnChange = func() {}
	}
	return &Source{cfg: cfg, client: client, store: store, opts: opts, log: opts.Logger,
		latest: make(chan nodeEvent, 1), synced: make(chan struct{}),
		status: Status{Node: cfg.NodeName, PodCIDRs: []string{}}}, nil
}

// Name is "node".
func (s *Source) Name() string { return Group }

// waiting is what an empty pool waits for.
func (s *Source) waiting() string {
	return fmt.Sprintf("Node %s's spec.podCIDRs", s.cfg.NodeName)
}

// Restore fills the pool from the checkpoint's record of this Node, so
// ADD and DEL work before (or without) the API server. It reports whether
// the pool has ranges; when not, the pool waits for the Node.
func (s *Source) Restore(ctx context.Context) (bool, error) {
	rec, ok := s.store.NodeRecord()
	if !ok || rec.Name != s.cfg.NodeName {
		s.store.SetPoolWaiting(s.waiting())
		s.setStatus(func(st *Status) { st.Waiting = s.waiting() })
		return false, nil
	}
	nr := datastore.NodeRanges{Group: Group, Name: rec.Name, UID: rec.UID,
		Current: blocks(rec.PodCIDRs), Retiring: blocks(rec.Retiring)}
	s.store.SetPoolWaiting(s.waiting())
	if err := s.store.SetNodeRanges(ctx, nr); err != nil {
		return false, fmt.Errorf("podCIDR source: restore the ranges of Node %s from the checkpoint: %w", rec.Name, err)
	}
	s.recordApplied(rec.UID, rec.PodCIDRs)
	s.log.Info("pool filled from the checkpoint's record of the Node", slog.String("node", rec.Name),
		slog.String("uid", rec.UID), slog.Any("podCIDRs", rec.PodCIDRs), slog.Any("retiring", rec.Retiring))
	return len(rec.PodCIDRs) > 0, nil
}

// Run watches the Node and keeps the pool equal to its podCIDRs until ctx
// is done. Call Restore first.
func (s *Source) Run(ctx context.Context) error {
	factory := informers.NewSharedInformerFactoryWithOptions(s.client, 0,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("metadata.name", s.cfg.NodeName).String()
		}))
	inf := factory.Core().V1().Nodes().Informer()
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { s.offer(obj, false) },
		UpdateFunc: func(_, obj any) { s.offer(obj, false) },
		DeleteFunc: func(obj any) { s.offer(obj, true) },
	}); err != nil {
		return fmt.Errorf("podCIDR source: %w", err)
	}
	factory.Start(ctx.Done())
	defer factory.Shutdown()
	go func() {
		if cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
			s.setStatus(func(st *Status) { st.Synced = true })
			s.goneWhileAway(inf.GetStore())
			close(s.synced)
			s.log.Info("node informer synced", slog.String("node", s.cfg.NodeName))
		}
	}()
	return s.applyLoop(ctx)
}

// goneWhileAway retires the checkpoint's ranges when the informer's first
// list shows no such Node: it was deleted while ipamd was down, and the
// controller may have given its ranges to another node.
func (s *Source) goneWhileAway(store cache.Store) {
	if _, exists, err := store.GetByKey(s.cfg.NodeName); err != nil || exists {
		return
	}
	rec, ok := s.store.NodeRecord()
	if !ok || rec.Name != s.cfg.NodeName || rec.UID == "" {
		return
	}
	gone := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: s.cfg.NodeName, UID: types.UID(rec.UID)}}
	s.offer(cache.DeletedFinalStateUnknown{Key: s.cfg.NodeName, Obj: gone}, true)
}

// Synced is closed once the informer has listed the Node.
func (s *Source) Synced() <-chan struct{} { return s.synced }

// offer puts the newest Node in the one-slot mailbox, replacing an older
// one not applied yet: only the latest state of the Node matters.
func (s *Source) offer(obj any, deleted bool) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	n, ok := obj.(*corev1.Node)
	if !ok {
		return
	}
	ev := nodeEvent{node: n, deleted: deleted}
	for {
		select {
		case s.latest <- ev:
			return
		default:
		}
		select {
		case <-s.latest:
		default:
		}
	}
}

// applyLoop applies each Node seen; a failed write is retried (newer
// Nodes first) after retryDelay.
func (s *Source) applyLoop(ctx context.Context) error {
	var pending *nodeEvent
	var retry <-chan time.Time
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev := <-s.latest:
			pending = &ev
		case <-retry:
		}
		retry = nil
		if pending == nil {
			continue
		}
		if err := s.apply(ctx, *pending); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			s.log.Error("could not apply the Node's ranges; retrying", slog.String("node", s.cfg.NodeName), slog.Any("error", err))
			s.setStatus(func(st *Status) { st.LastError = err.Error() })
			retry = time.After(retryDelay)
			continue
		}
		pending = nil
		s.setStatus(func(st *Status) { st.LastError = "" })
	}
}
