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
	"net/netip"
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

// ForAddress returns the events of ip, oldest first.
func (h *History) ForAddress(ip netip.Addr) []datastore.Event {
	return h.Select(func(e datastore.Event) bool { return e.Assignment.Address.IP == ip })
}

// ForSandbox returns the events of sandbox id, oldest first.
func (h *History) ForSandbox(id string) []datastore.Event {
	return h.Select(func(e datastore.Event) bool { return e.Assignment.SandboxID == id })
}

// ForPod returns the events of the pod named name, or namespace/name,
// oldest first. Pod names are reused (StatefulSets), so this may span
// several sandboxes: that is the point of asking.
func (h *History) ForPod(name string) []datastore.Event {
	return h.Select(func(e datastore.Event) bool { return podMatches(e.Assignment.Pod, name) })
}

// podMatches reports whether name is the pod's name or namespace/name.
func podMatches(p datastore.Pod, name string) bool {
	return p.Name != "" && (p.Name == name || p.Namespace+"/"+p.Name == name)
}

// PodMatches is the rule ForPod applies, for callers matching
// assignments the same way.
func PodMatches(p datastore.Pod, name string) bool { return podMatches(p, name) }
