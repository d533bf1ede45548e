package lease

import (
	coordinationv1 "k8s.io/api/coordination/v1"

	"github.com/sandboxipam/sandboxipam/cluster/api/ipamdlease"
)

// fillAddresses records in l where this ipamd answers the reclaimer's
// alive probe, or removes a record it no longer answers on: a stale
// address would make the reclaimer ask a machine that is not this node.
func (r *Renewer) fillAddresses(l *coordinationv1.Lease) {
	if len(r.opts.AliveAddresses) == 0 {
		delete(l.Annotations, ipamdlease.LeaseAddressesAnnotation)
		return
	}
	l.Annotations[ipamdlease.LeaseAddressesAnnotation] = ipamdlease.FormatAddresses(r.opts.AliveAddresses)
}
