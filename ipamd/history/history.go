// Package history keeps the recent assignment events of one ipamd in
// memory (assigned, adopted, released and why), so that `ipamctl who` can
// say who held an address before and who freed it.
//
// It is bounded: a ring of the last N events, oldest overwritten first,
// with a count of the events it dropped, so a busy node's churn costs a
// fixed amount of memory. It is not persisted: after a restart the
// checkpoint still says who holds what, and the log (one line per release
// with its reason) has the older history.
package history

import (
	"sync"

	"github.com/sandboxipam/sandboxipam/ipamd/datastore"
)

// DefaultCapacity is how many events a History keeps by default: about a
// day of churn on a busy node at a few hundred bytes each.
const DefaultCapacity = 4096

// History is a bounded, concurrency-safe ring of datastore events.
type History struct {
	mu      sync.Mutex
	buf     []datastore.Event
	next    int
	full    bool
	dropped uint64
}

// New returns a History that keeps the last capacity events; capacity <= 0
// means DefaultCapacity.
func New(capacity int) *History {
	if capacity <= 0 {
		capacity = DefaultCapacity
	}
	return &History{buf: make([]datastore.Event, capacity)}
}

// Record appends events in order; it fits datastore.Options.OnEvent.
func (h *History) Record(events []datastore.Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, e := range events {
		if h.full {
			h.dropped++
		}
		h.buf[h.next] = e
		h.next++
		if h.next == len(h.buf) {
			h.next, h.full = 0, true
		}
	}
}

// Dropped counts the events overwritten since New.
func (h *History) Dropped() uint64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.dropped
}

// Select returns the kept events that match, oldest first.
func (h *History) Select(match func(datastore.Event) bool) []datastore.Event {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []datastore.Event
	visit := func(es []datastore.Event) {
		for _, e := range es {
			if match(e) {
				out = append(out, e)
			}
		}
	}
	if h.full {
		visit(h.buf[h.next:])
	}
	visit(h.buf[:h.next])
	return out
}

// PodMatches reports whether name is the pod's name or namespace/name.
// Pod names are reused (StatefulSets), so a query by pod may span several
// sandboxes: that is the point of asking.
func PodMatches(p datastore.Pod, name string) bool {
	return p.Name != "" && (p.Name == name || p.Namespace+"/"+p.Name == name)
}
