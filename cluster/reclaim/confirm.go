package reclaim

import (
	"context"
	"fmt"
	"strings"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/pager"
	"k8s.io/utils/ptr"

	"github.com/sandboxipam/sandboxipam/cluster/api/ipamdlease"
	"github.com/sandboxipam/sandboxipam/cluster/api/v1alpha1"
)

// forgetLeases drops what is remembered of Leases of nodes that neither
// hold a block nor have a Lease.
func (r *Reclaimer) forgetLeases(blocks []runtime.Object) {
	keep := map[string]bool{}
	for _, obj := range blocks {
		if m, err := metaOf(obj); err == nil {
			keep[m] = true
		}
	}
	if leases, err := r.nodeLeases.List(labels.Everything()); err == nil {
		for _, l := range leases {
			keep[l.Name] = true
		}
	}
	r.leases.keepOnly(keep)
	ipamd := map[string]bool{}
	for n := range keep {
		ipamd[ipamdlease.IpamdLeaseName(n)] = true
	}
	if leases, err := r.ipamdLeases.List(labels.Everything()); err == nil {
		for _, l := range leases {
			ipamd[l.Name] = true
		}
	}
	r.ipamdSeen.keepOnly(ipamd)
}

// metaOf is the node name a block object names.
func metaOf(obj runtime.Object) (string, error) {
	u, ok := obj.(interface{ UnstructuredContent() map[string]any })
	if !ok {
		return "", fmt.Errorf("%T is not unstructured", obj)
	}
	spec, _ := u.UnstructuredContent()["spec"].(map[string]any)
	name, _ := spec["nodeName"].(string)
	return name, nil
}

// confirmAndReclaim reads the evidence for the candidates again, fresh
// from the API server (one list of every Pod for them all), and deletes
// each block that is still reclaimable.
func (r *Reclaimer) confirmAndReclaim(ctx context.Context, candidates []candidate, p *Pass) {
	var addrs []podAddr
	err := pager.New(func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
		return r.clients.Kube.CoreV1().Pods(metav1.NamespaceAll).List(ctx, o)
	}).EachListItem(ctx, metav1.ListOptions{}, func(obj runtime.Object) error {
		addrs = appendPodAddrs(addrs, obj.(*corev1.Pod))
		return nil
	})
	if err != nil {
		p.Errors = append(p.Errors, fmt.Sprintf("list Pods to confirm %d reclaim(s): %v", len(candidates), err))
		return
	}
	for _, c := range candidates {
		if ctx.Err() != nil {
			return
		}
		in, err := r.freshInput(ctx, c, addrs)
		if err != nil {
			p.Errors = append(p.Errors, err.Error())
			continue
		}
		d := decide(c.block, in)
		setDecision(p, d)
		if !d.Reclaim {
			r.log.Info("reclaimer: block kept: fresh reads differ from the cache", "block", c.block.Name, "keep", d.Keep)
			continue
		}
		deleted, err := r.reclaim(ctx, c.block, d.Verdict)
		if err != nil {
			p.Errors = append(p.Errors, err.Error())
			continue
		}
		if deleted {
			p.Reclaimed = append(p.Reclaimed, c.block.Name)
		}
	}
}

// setDecision replaces the pass's decision on d's block with d.
func setDecision(p *Pass, d Decision) {
	for i := range p.Decisions {
		if p.Decisions[i].Block == d.Block {
			p.Decisions[i] = d
		}
	}
}

// freshInput reads the block's Node and Lease from the API server.
func (r *Reclaimer) freshInput(ctx context.Context, c candidate, addrs []podAddr) (Input, error) {
	in := r.input(c.block, r.clock.Now())
	name := c.block.Spec.NodeName
	n, err := r.clients.Kube.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	switch {
	case err == nil:
		in.NodeExists, in.NodeUID = true, string(n.UID)
	case !apierrors.IsNotFound(err):
		return in, fmt.Errorf("get Node %s to confirm reclaiming %s: %w", name, c.block.Name, err)
	}
	var lease *coordinationv1.Lease
	l, err := r.clients.Kube.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(ctx, name, metav1.GetOptions{})
	switch {
	case err == nil:
		lease = l
	case !apierrors.IsNotFound(err):
		return in, fmt.Errorf("get Lease kube-node-lease/%s to confirm reclaiming %s: %w", name, c.block.Name, err)
	}
	in.Lease = r.leases.observe(name, lease)
	ipamd, err := r.freshIpamdLease(ctx, name)
	if err != nil {
		return in, fmt.Errorf("get ipamd Lease %s to confirm reclaiming %s: %w", in.IpamdLease, c.block.Name, err)
	}
	in.Ipamd = r.ipamdSeen.observe(ipamdlease.IpamdLeaseName(name), ipamd)
	in.Pods = podsIn(c.cidr, addrs)
	return in, nil
}

// freshIpamdLease reads node's ipamd Lease from the API server; nil when
// there is none.
func (r *Reclaimer) freshIpamdLease(ctx context.Context, node string) (*coordinationv1.Lease, error) {
	l, err := r.clients.Kube.CoordinationV1().Leases(r.cfg.IpamdLeaseNamespace).Get(ctx, ipamdlease.IpamdLeaseName(node), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return l, err
}

// reclaim deletes the block, on the condition that it is the very object
// judged (UID and resourceVersion), then records the Event and the log
// line naming the evidence. It reports whether the block was deleted: a
// block changed or gone since it was judged is not, and is no error.
func (r *Reclaimer) reclaim(ctx context.Context, b v1alpha1.IPBlock, v Verdict) (bool, error) {
	if r.opts.BeforeDelete != nil {
		r.opts.BeforeDelete(ctx, b.Name)
	}
	// The resourceVersion is the one judged: an ipamd that lifted its
	// fence since wrote the block first (ipamdlease.FenceLiftAnnotation),
	// so the delete fails with a Conflict and the block is kept.
	pre := metav1.Preconditions{UID: ptr.To(b.UID), ResourceVersion: ptr.To(b.ResourceVersion)}
	err := r.clients.Dynamic.Resource(v1alpha1.IPBlockResource).Delete(ctx, b.Name, metav1.DeleteOptions{Preconditions: &pre})
	switch {
	case apierrors.IsNotFound(err), apierrors.IsConflict(err):
		r.log.Info("reclaimer: block changed or gone since it was judged; judged again next pass", "block", b.Name, "err", err)
		return false, nil
	case err != nil:
		r.metrics.errors.WithLabelValues("delete").Inc()
		return false, fmt.Errorf("delete IPBlock %s: %w", b.Name, err)
	}
	evidence := strings.Join(v.Evidence, "; ")
	r.metrics.reclaimed.Inc()
	r.returned.add(b, r.alive.seenFor(b).Addresses, r.clock.Now())
	r.log.Warn("reclaimer: reclaimed the block of a dead node", "block", b.Name, "cidr", b.Spec.CIDR, "node", b.Spec.NodeName,
		"nodeUID", b.Spec.NodeUID, "pool", b.Spec.Pool, "evidence", evidence, "reclaimer", r.opts.Identity)
	if err := r.event(ctx, b, evidence); err != nil {
		r.metrics.errors.WithLabelValues("event").Inc()
		r.log.Error("reclaimer: the Event of a reclaim was not recorded; the log line above is its record", "block", b.Name, "err", err)
	}
	return true, nil
}

// maxMessage is the length an Event's message is cut to.
const maxMessage = 1024

// event records the reclaim as an Event on the block.
func (r *Reclaimer) event(ctx context.Context, b v1alpha1.IPBlock, evidence string) error {
	msg := fmt.Sprintf("Reclaimed %s of node %s (UID %s): %s", b.Spec.CIDR, b.Spec.NodeName, b.Spec.NodeUID, evidence)
	return r.recordEvent(ctx, b, corev1.EventTypeNormal, EventReason, "Delete", msg)
}

// recordEvent records an Event on the block. Events of cluster-scoped
// objects live in the default namespace, where `kubectl describe ipblock`
// finds them.
func (r *Reclaimer) recordEvent(ctx context.Context, b v1alpha1.IPBlock, evType, reason, action, msg string) error {
	now := metav1.NewTime(r.clock.Now())
	if len(msg) > maxMessage {
		msg = msg[:maxMessage]
	}
	ev := &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{GenerateName: b.Name + ".", Namespace: metav1.NamespaceDefault},
		InvolvedObject: corev1.ObjectReference{APIVersion: v1alpha1.Group + "/" + v1alpha1.Version, Kind: v1alpha1.IPBlockKind,
			Name: b.Name, UID: b.UID, ResourceVersion: b.ResourceVersion},
		Reason: reason, Message: msg, Type: evType, Count: 1,
		FirstTimestamp: now, LastTimestamp: now, EventTime: metav1.NewMicroTime(now.Time),
		Source:              corev1.EventSource{Component: Component, Host: r.opts.Identity},
		ReportingController: ReportingController, ReportingInstance: r.opts.Identity, Action: action,
	}
	_, err := r.clients.Kube.CoreV1().Events(metav1.NamespaceDefault).Create(ctx, ev, metav1.CreateOptions{})
	return err
}

// What the reclaimer's Events say they are. EventReasonReturned is the
// Warning on a reclaimed block another node holds now, when the node it
// was reclaimed from answers again (returned.go).
const (
	EventReason         = "Reclaimed"
	EventReasonReturned = "ReclaimedNodeAnswers"
	Component           = "sandboxipam-reclaimer"
	ReportingController = "sandboxipam.io/reclaimer"
)
