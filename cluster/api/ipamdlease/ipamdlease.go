// Package ipamdlease names ipamd's own Lease, the evidence of life the
// reclaimer requires before it reclaims a node's blocks, and holds the
// reclaimer's grace that ipamd's fence is validated against. It is a leaf
// (standard library only): ipamd's pool settings (package poolconf) read
// it without compiling client-go, and the reclaimer and the pool source
// share one name and one grace.
package ipamdlease

import (
	"fmt"
	"hash/fnv"
	"strings"
	"time"
)

// What ipamd's own Lease is called and carries. Each ipamd of the pool
// renews one coordination.k8s.io Lease of its own, in the namespace it
// runs in, as evidence that it lives (kubelet's node Lease goes with the
// Node object, so it proves nothing about ipamd); the reclaimer keeps a
// node's blocks while that Lease changes (package cluster/reclaim).
const (
	// IpamdLeasePrefix starts every ipamd Lease's name. Kubelet's node
	// Leases are named after the bare node and live in kube-node-lease,
	// and the reclaimer's leader Lease is "sandboxipam-reclaimer", so no
	// node name can make one of ours collide with either.
	IpamdLeasePrefix = "sandboxipam-ipamd-"
	// LeaseNodeUIDAnnotation holds the UID of the Node the ipamd renewing
	// the Lease claims blocks under; spec.holderIdentity is its name.
	LeaseNodeUIDAnnotation = "sandboxipam.io/node-uid" // v1alpha1.Group + "/node-uid": a test holds them equal
	// DefaultReclaimGrace is the grace the reclaimer ships with: a block's
	// node must have shown no sign of life for this long before its blocks
	// are reclaimed. ipamd's fence (ipSource.pool.lease.fenceAfter) is
	// validated against it.
	DefaultReclaimGrace = 5 * time.Minute
	// MinReclaimGrace is the shortest grace the reclaimer accepts.
	MinReclaimGrace = time.Minute
)

// maxName is the longest object name (a DNS subdomain).
const maxName = 253

// IpamdLeaseName is the name of the Lease node's ipamd renews. A node name
// too long for the prefix is cut and ends in a hash of the whole name, so
// two long names never share a Lease.
func IpamdLeaseName(node string) string {
	name := IpamdLeasePrefix + node
	if len(name) <= maxName {
		return name
	}
	h := fnv.New64a()
	h.Write([]byte(node))
	sum := fmt.Sprintf("-%016x", h.Sum64())
	return strings.TrimRight(name[:maxName-len(sum)], ".-") + sum
}
