package docker

import (
	"sync"
	"time"

	"github.com/sandboxipam/sandboxipam/adapters/internal/proc"
)

// inspection is what only an inspection tells about a sandbox: its
// creation time to the nanosecond, which never changes, and the process
// ID it had if it was running, which stays right until the container
// restarts.
type inspection struct {
	createdAt time.Time
	pid       int
}

// inspectionCache spares a listing one Engine inspection per sandbox: on
// a 100-pod node those dominate the listing's cost. An entry is trusted
// for a running sandbox only while the kernel still puts its process in
// the container's cgroup, so a restarted sandbox is inspected again.
type inspectionCache struct {
	mu      sync.Mutex
	entries map[string]inspection
}

// lookup returns the cached inspection of a sandbox in the listed state,
// or false when it must be inspected.
func (c *inspectionCache) lookup(id string, running bool) (inspection, bool) {
	c.mu.Lock()
	entry, ok := c.entries[id]
	c.mu.Unlock()
	if !ok {
		return inspection{}, false
	}
	if running && !proc.InContainer(entry.pid, id) {
		return inspection{}, false
	}
	return entry, true
}

func (c *inspectionCache) store(id string, entry inspection) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.entries == nil {
		c.entries = make(map[string]inspection)
	}
	c.entries[id] = entry
}

// retain forgets every sandbox not in listed, so that the cache holds
// no more than the node's sandboxes.
func (c *inspectionCache) retain(listed map[string]bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for id := range c.entries {
		if !listed[id] {
			delete(c.entries, id)
		}
	}
}
