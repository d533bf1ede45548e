package reclaim

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/sandboxipam/sandboxipam/cluster/clustercheck"
)

// Check runs the cluster-wide comparison on the caches, logs each finding
// and sets the metrics. It reports only: nothing is released or deleted
// for what it finds.
func (r *Reclaimer) Check() clustercheck.Report {
	var s clustercheck.Snapshot
	for _, src := range []struct {
		list func() ([]any, error)
		add  func(any)
	}{
		{listAll(r.pools.List), func(o any) { s.AddPool(o.(*unstructured.Unstructured)) }},
		{listAll(r.blocks.List), func(o any) { s.AddBlock(o.(*unstructured.Unstructured)) }},
	} {
		objs, err := src.list()
		if err != nil {
			r.log.Error("reclaimer: cluster check: read the cache", "err", err)
			return clustercheck.Report{}
		}
		for _, o := range objs {
			src.add(o)
		}
	}
	nodes, err := r.nodes.List(labels.Everything())
	if err != nil {
		r.log.Error("reclaimer: cluster check: read the Node cache", "err", err)
		return clustercheck.Report{}
	}
	for _, n := range nodes {
		s.AddNode(n)
	}
	pods, err := r.pods.List(labels.Everything())
	if err != nil {
		r.log.Error("reclaimer: cluster check: read the Pod cache", "err", err)
		return clustercheck.Report{}
	}
	for _, p := range pods {
		s.AddPod(p)
	}
	rep := clustercheck.Compare(s)
	for _, f := range rep.Findings {
		r.log.Warn("cluster check: "+f.Words, "kind", f.Kind)
	}
	r.metrics.observeCheck(rep, float64(r.clock.Now().UnixNano())/1e9)
	return rep
}

func listAll[T any](list func(labels.Selector) ([]T, error)) func() ([]any, error) {
	return func() ([]any, error) {
		objs, err := list(labels.Everything())
		out := make([]any, len(objs))
		for i, o := range objs {
			out[i] = o
		}
		return out, err
	}
}
