package datastore

// The assignment types are package state's, which owns the assignment
// table; they are named here too so that every caller keeps naming them
// datastore.Key, datastore.Assignment and so on.

import "github.com/sandboxipam/sandboxipam/ipamd/datastore/state"

type (
	// Key identifies one pod interface, as the CNI plugin names it.
	Key = state.Key
	// Pod is the pod's identity: metadata only, never matched on.
	Pod = state.Pod
	// Assignment is one pod interface's addresses: one per family of
	// the pool.
	Assignment = state.Assignment
	// NetNS is a pod's network namespace as its ADD named it.
	NetNS = state.NetNS
	// Wiring is how the CNI plugin ran for an ADD.
	Wiring = state.Wiring
)

// Values of Wiring, as the checkpoint records them.
const (
	// WiringUnknown: an older plugin that does not say, or an assignment
	// adopted from the runtime.
	WiringUnknown = state.WiringUnknown
	// WiringMainPlugin: the plugin wired the pod itself.
	WiringMainPlugin = state.WiringMainPlugin
	// WiringIPAMOnly: another main plugin wired the pod; its missing pod
	// link proves nothing.
	WiringIPAMOnly = state.WiringIPAMOnly
)

// Origin is what the ADD that makes an assignment says of the pod beside
// its key: how the plugin ran, and the pod's network namespace.
type Origin struct {
	Wiring Wiring
	NetNS  NetNS
}
