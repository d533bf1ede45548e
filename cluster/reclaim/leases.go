package reclaim

import (
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/utils/clock"
)

// leaseWatch remembers, per Lease (kubelet's are keyed by node name,
// ipamd's by their own name), the version last seen and when,
// by the reclaimer's clock, it was first seen: a Lease counts as quiet
// only for as long as the reclaimer itself has watched it not change.
type leaseWatch struct {
	clock clock.PassiveClock
	mu    sync.Mutex
	seen  map[string]leaseState
}

type leaseState struct {
	version string
	LeaseSeen
}

func newLeaseWatch(c clock.PassiveClock) *leaseWatch {
	return &leaseWatch{clock: c, seen: map[string]leaseState{}}
}

// observe records node's Lease as now seen (nil: absent) and returns what
// is known of it. A new resourceVersion, an appearance or a disappearance
// restarts the quiet time; Duration is the longest seen of it since the
// reclaimer started watching (0: none yet).
func (w *leaseWatch) observe(node string, l *coordinationv1.Lease) LeaseSeen {
	version, seen := "absent", LeaseSeen{}
	if l != nil {
		version, seen.Present = l.ResourceVersion, true
		if l.Spec.RenewTime != nil {
			seen.RenewTime = l.Spec.RenewTime.Time
		}
		if d := l.Spec.LeaseDurationSeconds; d != nil && *d > 0 {
			seen.Duration = time.Duration(*d) * time.Second
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	st, ok := w.seen[node]
	if !ok || st.version != version {
		seen.Since = w.clock.Now()
		// The longest duration ever seen of the Lease outlives its
		// versions: a Lease deleted (or written without one) says nothing
		// of how long its ipamd may still hand out addresses (issue 44).
		seen.Duration = max(seen.Duration, st.Duration)
		st = leaseState{version: version, LeaseSeen: seen}
		w.seen[node] = st
	}
	return st.LeaseSeen
}

// keepOnly forgets the nodes not in names: neither a block's node nor a
// Lease's any more.
func (w *leaseWatch) keepOnly(names map[string]bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for n := range w.seen {
		if !names[n] {
			delete(w.seen, n)
		}
	}
}
