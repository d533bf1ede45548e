package pool

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
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

// ReportingInstance names ipamd on node in its Events. The API server
// (components/pool, events-admission.yaml) refuses an Event of ipamd's
// token that names another instance, so it is the node's name, not the
// host name client-go's recorder would put there (a host name need not
// be the Node's name).
func ReportingInstance(node string) string { return ReportingController + "-" + node }

// instanceSink creates every Event as reported by ipamd on one node; a
// series' patch changes only the series, so it goes through unchanged.
type instanceSink struct {
	events.EventSink
	instance string
}

func (s instanceSink) Create(ctx context.Context, e *eventsv1.Event) (*eventsv1.Event, error) {
	e = e.DeepCopy()
	e.ReportingInstance = s.instance
	return s.EventSink.Create(ctx, e)
}

// startEvents starts the Event recorder; the returned func stops it.
func (s *Source) startEvents(ctx context.Context) (func(), error) {
	rec, stop, err := NewRecorder(ctx, s.kube, s.nodeName)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.events = rec
	s.mu.Unlock()
	return stop, nil
}

// NewRecorder starts the recorder of ipamd's Events on node through kube:
// reported by ReportingController as ReportingInstance(node). The
// returned func stops it.
func NewRecorder(ctx context.Context, kube kubernetes.Interface, node string) (events.EventRecorder, func(), error) {
	sink := instanceSink{EventSink: &events.EventSinkImpl{Interface: kube.EventsV1()}, instance: ReportingInstance(node)}
	b := events.NewBroadcaster(sink)
	if err := b.StartRecordingToSinkWithContext(ctx); err != nil {
		return nil, nil, fmt.Errorf("pool source: start the Event recorder of node %s: %w", node, err)
	}
	return b.NewRecorder(scheme.Scheme, ReportingController), b.Shutdown, nil
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
