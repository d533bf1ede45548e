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
// The API shows only the pods it has objects of: a node cut off from the
// API server alone runs its pods on after their Pods are deleted. So a
// snapshot may also carry what each node's ipamd holds (Snapshot.FromNodes,
// Held; `ipamctl pods` read on the node), and Compare then joins it with
// the API's view: an address two nodes' ipamds hold, an address an ipamd
// holds outside its node's blocks and podCIDRs, an address an ipamd holds
// while a pod on another node has it in the API. What it could not see is
// listed, never passed over: each node whose ipamd was not read, with the
// reason, and each node that holds blocks but has no Node (nothing reaches
// its ipamd through the API server). The reclaimer's periodic check reads
// no node.
//
// Snapshot's Add methods convert the API's objects and record each object
// they cannot read as an Unreadable finding, never skipping it silently.
//
// See docs/architecture.md for where this package sits and the life of an
// ADD, a DEL, a reconcile pass and a restart through the daemon.
package clustercheck
