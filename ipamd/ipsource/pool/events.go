package pool

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
)

// The reasons of the pool source's Events, recorded on this node's Node
// (in the default namespace, where the Events of cluster-scoped objects
// live and `kubectl describe node` finds them; the Node may be gone).
const (
	// EventForeignBlock: addresses held here lie in a block another node
	// holds, or nobody while this Node is gone (guard).
	EventForeignBlock = "ForeignBlock"
	// EventFenced: this ipamd's Lease lapsed; it hands out nothing new.
	EventFenced = "Fenced"
	// ReportingController names ipamd in its Events.
	ReportingController = "sandboxipam.io/ipamd"
)

// startEvents starts the Event recorder; the returned func stops it.
func (s *Source) startEvents(ctx context.Context) (func(), error) {
	b := events.NewBroadcaster(&events.EventSinkImpl{Interface: s.kube.EventsV1()})
	if err := b.StartRecordingToSinkWithContext(ctx); err != nil {
		return nil, fmt.Errorf("pool source: start the Event recorder: %w", err)
	}
	rec := b.NewRecorder(scheme.Scheme, ReportingController)
	s.mu.Lock()
	s.events = rec
	s.mu.Unlock()
	return b.Shutdown, nil
}

// event records a Warning Event on this Node; before Run it is only
// logged (the log line beside each call is the record either way).
func (s *Source) event(reason, format string, args ...any) {
	s.mu.Lock()
	rec, uid := s.events, s.status.UID
	s.mu.Unlock()
	if rec == nil {
		return
	}
	node := &corev1.ObjectReference{APIVersion: "v1", Kind: "Node", Name: s.nodeName, UID: types.UID(uid)}
	rec.Eventf(node, nil, corev1.EventTypeWarning, reason, reason, format, args...)
}
