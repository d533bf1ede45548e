package runtime

import (
	"context"
	"net/netip"
	"time"
)

// RuntimeAdapter reports the pod sandboxes of one container runtime.
type RuntimeAdapter interface {
	// Info names the adapter and the runtime it talks to.
	Info(ctx context.Context) (Info, error)
	// ListSandboxes returns every pod sandbox that still exists, Ready or
	// not. It returns an error, never an empty list, when the runtime
	// cannot be read.
	ListSandboxes(ctx context.Context) ([]Sandbox, error)
	// GetSandbox returns one sandbox by its full ID, or an error wrapping
	// ErrNotFound when the runtime no longer has it.
	GetSandbox(ctx context.Context, id string) (Sandbox, error)
}

// SandboxState is whether a sandbox's infra container is running.
type SandboxState int

const (
	// StateUnknown is never returned by a conformant adapter; it is the
	// zero value so that a forgotten assignment is visible.
	StateUnknown SandboxState = iota
	// StateReady means the infra (pause) container is running.
	StateReady
	// StateNotReady means the sandbox exists but is stopped. It still owns
	// its IP until it is removed.
	StateNotReady
)

// String returns "Ready", "NotReady" or "Unknown".
func (s SandboxState) String() string {
	switch s {
	case StateReady:
		return "Ready"
	case StateNotReady:
		return "NotReady"
	default:
		return "Unknown"
	}
}

// Sandbox is one pod sandbox as the runtime reports it.
type Sandbox struct {
	// ID is the infra sandbox ID exactly as the CNI plugin receives it.
	ID string
	// Name, Namespace and UID identify the pod. They are metadata only:
	// ipamd never matches an IP by pod name (StatefulSets reuse names).
	Name      string
	Namespace string
	UID       string
	// Attempt counts sandbox re-creations for the same pod, starting at 0.
	Attempt uint32
	State   SandboxState
	// CreatedAt is when the runtime created the sandbox.
	CreatedAt time.Time
	// NetNS is the network namespace path, when the runtime knows it.
	NetNS string
	// HostNetwork is true for pods that share the node's network
	// namespace. They own no pod IP and are never reconciled as leaks.
	HostNetwork bool
	// IPs are the pod addresses the runtime recorded for exactly this
	// sandbox, or none. For a Ready sandbox on the pod network they are the
	// addresses it holds now, every family of a dual-stack pod (CRI's
	// network.ip and additional_ips alike), in any order: ipamd takes the
	// IPv6 address of a dual-stack pod reported with its IPv4 one alone
	// for unheld after a state loss. A NotReady sandbox may report the address it
	// last had (CRI-O keeps it in PodSandboxStatus after the CNI DEL
	// released it): ipamd treats such an address as still held by that
	// sandbox until the sandbox is gone, never as proof about any other
	// sandbox or that an address is free. A host-network sandbox reports
	// none. An adapter that cannot tell reports none; ipamd then needs the
	// node's own pod links to account for the pod after a lost checkpoint.
	IPs []netip.Addr
	// Labels are the sandbox's labels as the runtime stores them.
	Labels map[string]string
}

// Info describes an adapter and the runtime behind it.
type Info struct {
	AdapterName    string // e.g. "docker"
	AdapterVersion string // the adapter binary's version
	RuntimeName    string // as the runtime names itself, e.g. "containerd", "cri-o", "docker"
	RuntimeVersion string
	Endpoint       string // the socket URI the adapter talks to
}
