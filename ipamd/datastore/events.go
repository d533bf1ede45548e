package datastore

import (
	"log/slog"
	"time"
)

// EventKind says what happened to an assignment.
type EventKind string

// Event kinds.
const (
	// EventAssigned: a CNI ADD got an address (a repeated ADD that
	// changes nothing makes no event).
	EventAssigned EventKind = "assigned"
	// EventAdopted: a runtime listing rebuilt the assignment after a lost
	// checkpoint.
	EventAdopted EventKind = "adopted"
	// EventReleased: the address was freed; Reason says by whom.
	EventReleased EventKind = "released"
)

// Release reasons: who freed an address. Operators grep the log for them
// and the metrics count releases by them.
const (
	// ReasonCNIDel: the runtime's CNI DEL.
	ReasonCNIDel = "cni_del"
	// ReasonCNIGC: the CNI GC verb did not name the attachment as valid.
	ReasonCNIGC = "cni_gc"
	// ReasonRuntimeGone: the reconciler found the sandbox gone from the
	// runtime.
	ReasonRuntimeGone = "runtime_gone"
	// ReasonOperator: an operator released it (ipamctl release).
	ReasonOperator = "operator"
)

// Event is one change of an assignment, for the operators' history and
// the metrics (Options.OnEvent).
type Event struct {
	At         time.Time
	Kind       EventKind
	Reason     string // set for EventReleased
	Assignment Assignment
}

// emit hands events to Options.OnEvent. It runs outside the lock, after
// the write that holds the change returned (successful or not: the change
// is in memory either way), so a slow hook never delays another caller.
func (s *Store) emit(events []Event) {
	if s.onEvent == nil || len(events) == 0 {
		return
	}
	s.onEvent(events)
}

// logRelease is the one line per release an operator greps for: reason,
// sandbox, pod and address.
func (s *Store) logRelease(reason string, a Assignment) {
	s.log.Info("address released", slog.String("reason", reason), slog.Any("key", a.Key),
		slog.Any("pod", a.Pod), slog.String("ip", a.Address.IP.String()))
}
