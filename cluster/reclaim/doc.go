// Package reclaim is the cluster pool's reclaimer: it returns a dead
// node's IPBlocks to the pool, only on evidence, and runs the cluster-wide
// comparison (package clustercheck) periodically for the metrics.
//
// A block is reclaimed only when all five hold (Decide):
//
//	(a) the Node that claimed it is gone: no Node has its name, or the
//	    Node of that name has another UID (registered again);
//	(b) that node's Lease in kube-node-lease has not been renewed for
//	    longer than the grace; and
//	(c) no Pod anywhere has a status.podIPs address inside the block,
//	    whatever its phase; and
//	(d) that node's ipamd has stopped renewing its own Lease
//	    (ipamdlease.IpamdLeaseName, in Config.IpamdLeaseNamespace): unchanged
//	    or absent, in the reclaimer's sight, for longer than
//	    ipamdlease.ReclaimWait: the grace, or D(1 + ε)/(1 − ε) + 1s when
//	    longer, where D is the longest leaseDurationSeconds seen of the
//	    Lease (ipamd's fence plus its renew interval: package
//	    ipsource/pool/lease), kept when the Lease is deleted, and the
//	    longest ipamd accepts (ipamdlease.MaxLeaseDuration) when none was
//	    seen, and ε = 1% bounds the rate error between ipamd's clock and
//	    the reclaimer's. So (F + R)(1 + ε) < W(1 − ε) holds whatever grace
//	    the reclaimer runs with: ipamd has fenced before any reclaim; and
//	(e) there is positive evidence, from a channel other than the API
//	    server, that the node no longer runs pods on the block: its ipamd
//	    has answered on none of the addresses its Lease records for
//	    longer than the grace, or an operator confirmed the node gone
//	    (nodeDead, in alive.go, says what counts and why).
//
// (a) to (c) can all hold under a node that lives: a kubelet stopped or
// cut off, `kubectl delete node`, and its kubelet Lease goes with the
// Node while PodGC deletes its Pods. (d) is ipamd's own word, and ipamd
// stops handing out addresses of its blocks before (d) can hold. But (a)
// to (d) all hold under a node cut off from the API server alone: its
// pods run on, on the block's addresses, and a fence cannot take those
// back (issue 44). (e) asks the node itself, over the data plane.
//
// Owner references are not evidence: a Node object can be deleted while
// its kubelet and its pods run on. (b) is judged as client-go's leader
// election judges a lease, by the reclaimer's own clock: a Lease counts
// as unrenewed only once the reclaimer has watched it stay unchanged (or
// absent) for the grace, so a kubelet's skewed clock cannot make a live
// node look dead, and a reclaimer that has just started (or just become
// leader) waits a full grace before it reclaims anything. Where the Lease
// exists, its spec.renewTime must be older than the grace as well.
//
// The decision is made on the informers' caches and confirmed, right
// before the delete, by fresh reads from the API server: the Node, both
// Leases and every Pod (a paginated list). The delete carries UID and
// resourceVersion preconditions, so a block claimed again, or changed,
// since it was judged is never deleted. That also orders a reclaim with
// ipamd lifting its fence, through the API server rather than by timing:
// before ipamd hands out an address again after a fence, it updates each
// of its blocks (ipamdlease.FenceLiftAnnotation), so a delete judged on
// its stale Lease before then fails with a Conflict, and a delete that
// landed first makes ipamd's update fail and the block retire there. Every reclaim is an Event on the
// block and a log line naming the four pieces of evidence.
//
// A node reclaimed on silence may only have been cut off on both planes.
// For Config.WatchReclaimed after a reclaim the reclaimer keeps asking
// that node's ipamd, and if it answers again as the node it reclaimed,
// reports it (returned.go): its old pods may hold addresses another node
// hands out now, until its kubelet kills them, and its own ipamd cannot
// say so (the API server refuses its deleted pod's token).
//
// One reclaimer acts at a time: Run takes a Lease through client-go's
// leader election, and only the leader starts informers and passes. It
// writes nothing but deletes of IPBlocks and Events; pods' addresses are
// only ever released by their own node's ipamd.
//
// See docs/architecture.md for where this package sits and the life of an
// ADD, a DEL, a reconcile pass and a restart through the daemon.
package reclaim
