// Package clustercheck is the cluster-wide comparison behind `ipamctl
// check --cluster` and the reclaimer's periodic check: one pure function,
// Compare, over what the API server holds (IPPools, IPBlocks, Nodes and
// Pods), with no I/O, so that the command, the controller and the tests
// judge exactly alike.
//
// It finds blocks that overlap, lie outside their pool or are not of its
// block size, pools whose CIDRs overlap (ipamd claims from neither part), blocks whose
// node does not exist (deleted, or registered again under another UID), a
// pod whose address lies outside its own node's blocks and podCIDRs, and
// one address held by two pods anywhere in the cluster. It reports only:
// the owning ipamd alone releases an address, and the reclaimer alone
// returns a dead node's block, each on its own evidence.
//
// A pod holds its addresses while it may have a sandbox: pods that have
// Succeeded or Failed (their sandboxes are torn down, though status.podIPs
// stays set) and hostNetwork pods (whose address is the node's) hold none
// here. The source of a node's addresses is not known to the check, so a
// pod's address is in range when it lies in one of its node's blocks
// (the pool source) or its node's spec.podCIDRs (the node source).
//
// Snapshot's Add methods convert the API's objects and record each object
// they cannot read as an Unreadable finding, never skipping it silently.
//
// See docs/architecture.md for where this package sits and the life of an
// ADD, a DEL, a reconcile pass and a restart through the daemon.
package clustercheck
