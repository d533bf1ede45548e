package lease

import (
	"context"
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/sandboxipam/sandboxipam/cluster/api/ipamdlease"
)

// Renew writes the Lease once, bounded by RenewInterval: an update that
// carries the resourceVersion last seen, or a create when there is none.
// A Conflict (someone else wrote it) makes the next renew read it again.
func (r *Renewer) Renew(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, r.opts.RenewInterval)
	defer cancel()
	sent := r.opts.Clock.Now()
	err := r.renew(ctx, sent)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lastErr = err
	if err != nil {
		return err
	}
	if sent.After(r.sent) {
		r.sent, r.lapsed = sent, false
	}
	return nil
}

func (r *Renewer) renew(ctx context.Context, sent time.Time) error {
	leases := r.kube.CoordinationV1().Leases(r.opts.Namespace)
	cur, err := r.current(ctx)
	if err != nil {
		return err
	}
	next := r.fill(cur, sent)
	var wrote *coordinationv1.Lease
	if cur == nil {
		wrote, err = leases.Create(ctx, next, metav1.CreateOptions{})
	} else {
		wrote, err = leases.Update(ctx, next, metav1.UpdateOptions{})
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case err == nil:
		r.lease = wrote
		return nil
	case apierrors.IsConflict(err), apierrors.IsAlreadyExists(err), apierrors.IsNotFound(err):
		r.lease = nil
	}
	return fmt.Errorf("write Lease %s: %w", r.Name(), err)
}

// current is the Lease last written, else read from the API server; nil
// when there is none.
func (r *Renewer) current(ctx context.Context) (*coordinationv1.Lease, error) {
	r.mu.Lock()
	l := r.lease
	r.mu.Unlock()
	if l != nil {
		return l, nil
	}
	l, err := r.kube.CoordinationV1().Leases(r.opts.Namespace).Get(ctx, ipamdlease.IpamdLeaseName(r.opts.Node), metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("read Lease %s: %w", r.Name(), err)
	}
	return l, nil
}

// fill is the Lease to write over cur (nil: a new one), renewed at sent.
func (r *Renewer) fill(cur *coordinationv1.Lease, sent time.Time) *coordinationv1.Lease {
	l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: r.opts.Namespace, Name: ipamdlease.IpamdLeaseName(r.opts.Node)}}
	if cur != nil {
		l = cur.DeepCopy()
	}
	r.mu.Lock()
	uid := r.uid
	r.mu.Unlock()
	if l.Annotations == nil {
		l.Annotations = map[string]string{}
	}
	l.Annotations[ipamdlease.LeaseNodeUIDAnnotation] = uid
	r.fillAddresses(l)
	now := metav1.NewMicroTime(sent)
	if l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity != r.opts.Node || l.Spec.AcquireTime == nil {
		l.Spec.AcquireTime = &now
	}
	l.Spec.HolderIdentity = ptr.To(r.opts.Node)
	l.Spec.LeaseDurationSeconds = ptr.To(int32(r.Duration() / time.Second))
	l.Spec.RenewTime = &now
	return l
}
