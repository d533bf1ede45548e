package reclaim

import (
	"context"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/sandboxipam/sandboxipam/cluster/api/v1alpha1"
)

// returnWatch keeps asking, for Config.WatchReclaimed after its last
// reclaim, the ipamd of every node whose blocks the reclaimer reclaimed
// as dead, and reports it once if it answers as that node again.
//
// This is issue 44's case left: a node cut off on both planes whose Node
// was deleted is reclaimed on silence, for nothing tells it apart from a
// machine powered off. When its network heals, its old pods still run on
// the reclaimed blocks' addresses, which another node may hand out now,
// until its kubelet finds them gone from the API and kills them. The
// node cannot say so itself: its ipamd's service-account token is bound
// to its pod, deleted with the Node's others, and the API server refuses
// every write it makes (Unauthorized). The reclaimer hears its ipamd on
// the data plane and says it: a Warning Event (EventReasonReturned) on
// each reclaimed block another node holds now, a log line at ERROR and
// sandboxipam_reclaimer_reclaimed_nodes_answering_total.
//
// What it remembers is in memory: a reclaimer that restarts, or a leader
// that changes, forgets the nodes reclaimed before it (the Reclaimed
// Events keep the record). A node whose Lease recorded no address (an
// operator confirmed it gone) cannot be asked, and is not kept.
type returnWatch struct {
	mu    sync.Mutex
	nodes map[string]*reclaimedNode // by node name and UID
}

// reclaimedNode is one node whose blocks were reclaimed.
type reclaimedNode struct {
	node, uid string
	addrs     []string
	// blocks: each reclaimed block's CIDR, and when it was reclaimed.
	blocks map[string]time.Time
	last   time.Time
}

func newReturnWatch() *returnWatch { return &returnWatch{nodes: map[string]*reclaimedNode{}} }

// add records that b was reclaimed at, its node's ipamd last recorded at
// addrs.
func (w *returnWatch) add(b v1alpha1.IPBlock, addrs []string, at time.Time) {
	if len(addrs) == 0 {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	key := b.Spec.NodeName + "/" + b.Spec.NodeUID
	n := w.nodes[key]
	if n == nil {
		n = &reclaimedNode{node: b.Spec.NodeName, uid: b.Spec.NodeUID, blocks: map[string]time.Time{}}
		w.nodes[key] = n
	}
	n.addrs, n.last = slices.Clone(addrs), at
	n.blocks[b.Spec.CIDR] = at
}

// targets are the nodes to ask this pass; the ones reclaimed longer than
// keep ago are forgotten.
func (w *returnWatch) targets(now time.Time, keep time.Duration) []target {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []target
	for key, n := range w.nodes {
		if now.Sub(n.last) > keep {
			delete(w.nodes, key)
			continue
		}
		out = append(out, target{node: n.node, uid: n.uid, addrs: slices.Clone(n.addrs), cidrs: slices.Sorted(maps.Keys(n.blocks))})
	}
	slices.SortFunc(out, func(a, b target) int { return strings.Compare(a.node+"/"+a.uid, b.node+"/"+b.uid) })
	return out
}

// take forgets t's node and returns when each of its blocks was
// reclaimed: it is reported once.
func (w *returnWatch) take(t target) map[string]time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	key := t.node + "/" + t.uid
	n := w.nodes[key]
	delete(w.nodes, key)
	if n == nil {
		return nil
	}
	return n.blocks
}

// probeReturned asks every reclaimed node's ipamd, concurrently, and
// reports each that answers as the node it was. It returns the nodes
// reported, as "name (UID uid)".
func (r *Reclaimer) probeReturned(ctx context.Context) []string {
	now := r.clock.Now()
	targets := r.returned.targets(now, r.cfg.WatchReclaimed)
	results := make([]probeResult, len(targets))
	var wg sync.WaitGroup
	for i, t := range targets {
		wg.Go(func() { results[i] = r.alive.probe(ctx, t) })
	}
	wg.Wait()
	if ctx.Err() != nil {
		return nil
	}
	var out []string
	for i, t := range targets {
		if results[i].alive == "" {
			continue
		}
		r.reportReturned(ctx, t, r.returned.take(t), results[i].alive, now)
		out = append(out, fmt.Sprintf("%s (UID %s)", t.node, t.uid))
	}
	return out
}

// reportReturned says that t's node answers again after its blocks were
// reclaimed: the log line and the metric, and an Event on each of those
// blocks that another node holds now, where two pods may hold one
// address.
func (r *Reclaimer) reportReturned(ctx context.Context, t target, reclaimedAt map[string]time.Time, by string, now time.Time) {
	var held []string
	for _, cidr := range slices.Sorted(maps.Keys(reclaimedAt)) {
		at := reclaimedAt[cidr]
		holder := "no node: free in the pool"
		if b, ok := r.cachedBlock(cidr); ok {
			holder = fmt.Sprintf("node %s (UID %s) holds it now", b.Spec.NodeName, b.Spec.NodeUID)
			if b.Spec.NodeName != t.node || b.Spec.NodeUID != t.uid {
				msg := fmt.Sprintf("The ipamd of node %s (UID %s), whose block %s was reclaimed %s ago as dead, answers again (%s): "+
					"pods still running there may hold addresses of %s, which node %s holds now, until that node's kubelet kills them",
					t.node, t.uid, cidr, now.Sub(at).Round(time.Second), by, cidr, b.Spec.NodeName)
				if err := r.recordEvent(ctx, b, corev1.EventTypeWarning, EventReasonReturned, "Report", msg); err != nil {
					r.metrics.errors.WithLabelValues("event").Inc()
					r.log.Error("reclaimer: the Event of a reclaimed node answering again was not recorded; the log line is its record", "block", b.Name, "err", err)
				}
			}
		}
		held = append(held, fmt.Sprintf("%s (reclaimed %s ago; %s)", cidr, now.Sub(at).Round(time.Second), holder))
	}
	r.metrics.returned.Inc()
	r.log.Error("reclaimer: the ipamd of a node whose blocks were reclaimed as dead answers again: its old pods may hold addresses now handed out elsewhere until its kubelet kills them",
		"node", t.node, "nodeUID", t.uid, "answer", by, "blocks", strings.Join(held, "; "), "reclaimer", r.opts.Identity)
}

// cachedBlock is the IPBlock of cidr in the informer's cache: a block's
// name is its CIDR's (v1alpha1.BlockName; the API server refuses any
// other).
func (r *Reclaimer) cachedBlock(cidr string) (v1alpha1.IPBlock, bool) {
	p, err := netip.ParsePrefix(cidr)
	if err != nil {
		return v1alpha1.IPBlock{}, false
	}
	obj, err := r.blocks.Get(v1alpha1.BlockName(p))
	if err != nil {
		return v1alpha1.IPBlock{}, false
	}
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return v1alpha1.IPBlock{}, false
	}
	b, err := v1alpha1.BlockFrom(u)
	return b, err == nil
}
