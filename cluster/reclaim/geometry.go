package reclaim

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/sandboxipam/sandboxipam/cluster/api/v1alpha1"
)

// poolsByName is every IPPool in the cache, by name; one that does not
// convert is left out (its blocks are then judged by nobody).
func (r *Reclaimer) poolsByName() map[string]v1alpha1.IPPool {
	out := map[string]v1alpha1.IPPool{}
	objs, err := r.pools.List(labels.Everything())
	if err != nil {
		return out
	}
	for _, obj := range objs {
		u, ok := obj.(*unstructured.Unstructured)
		if !ok {
			continue
		}
		if p, err := v1alpha1.PoolFrom(u); err == nil {
			out[p.Name] = p
		}
	}
	return out
}
