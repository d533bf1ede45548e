package state

// The assignment: one pod interface's key, its addresses and how it was
// made. The State keeps them in its table, changed only by Hold, Release,
// Repool and Confirm; the datastore re-exports these types under the same
// names, so its callers never name this package.

import (
	"cmp"
	"log/slog"
	"net/netip"
	"time"

	"github.com/sandboxipam/sandboxipam/ipamd/ipsource"
)

// Key identifies one pod interface, as the CNI plugin names it.
type Key struct{ Network, SandboxID, IfName string }

// Pod is the pod's identity: metadata only, never matched on.
type Pod struct{ Name, Namespace, UID string }

// Assignment is one pod interface's addresses: one per family of the
// pool.
type Assignment struct {
	Key
	Pod Pod
	// Address is the first family's address: IPv4 when the pool has
	// IPv4.
	Address ipsource.Address
	// Extra holds the further families' addresses: the IPv6 address of
	// a dual-stack pod. They are held and released with Address.
	Extra      []ipsource.Address
	AssignedAt time.Time
	// ListedAt is when a successful runtime listing first showed the
	// sandbox; zero until one has.
	ListedAt time.Time
	// Wiring is how the CNI plugin ran for the ADD that made it.
	Wiring Wiring
	// NetNS is the pod's network namespace as that ADD named it; zero
	// for an adopted assignment or one recorded before the field.
	NetNS NetNS
}

// NetNS is a pod's network namespace: the path the CNI ADD named (a
// /run/netns file, or /proc/PID/ns/net), and, when ipamd could open it at
// ADD, the namespace's identity (the device and inode of its nsfs file),
// so that another namespace at the same path later (a reused PID) is not
// taken for the pod's. A namespace still on the node only ever keeps an
// address: its absence proves nothing (ipamd may not see the host's
// namespaces at all).
type NetNS struct {
	Path string
	// Dev and Ino identify the namespace; both zero when it could not be
	// opened at ADD.
	Dev, Ino uint64
}

// Identified reports whether the namespace's identity was recorded.
func (n NetNS) Identified() bool { return n.Dev != 0 || n.Ino != 0 }

// Wiring is how the CNI plugin ran for an ADD: as the main plugin, which
// wires the pod (a pod link on the node), or as IPAM only under another
// main plugin (no pod link of ours).
type Wiring string

// Values of Wiring, as the checkpoint records them.
const (
	// WiringUnknown: an older plugin that does not say, or an assignment
	// adopted from the runtime.
	WiringUnknown Wiring = ""
	// WiringMainPlugin: the plugin wired the pod itself.
	WiringMainPlugin Wiring = "plugin"
	// WiringIPAMOnly: another main plugin wired the pod; its missing pod
	// link proves nothing.
	WiringIPAMOnly Wiring = "ipamOnly"
)

// All returns the assignment's addresses, Address first.
func (a Assignment) All() []ipsource.Address {
	return append([]ipsource.Address{a.Address}, a.Extra...)
}

// address returns the i-th of All without building the slice: the hot
// path (Hold, Release) visits every address of every assignment it
// changes.
func (a *Assignment) address(i int) ipsource.Address {
	if i == 0 {
		return a.Address
	}
	return a.Extra[i-1]
}

// count is len(a.All()).
func (a *Assignment) count() int { return 1 + len(a.Extra) }

// IPs returns the assignment's IP addresses, Address first.
func (a Assignment) IPs() []netip.Addr {
	out := make([]netip.Addr, 0, 1+len(a.Extra))
	for _, x := range a.All() {
		out = append(out, x.IP)
	}
	return out
}

// setAddress replaces the address of the same IP.
func (a *Assignment) setAddress(addr ipsource.Address) {
	if a.Address.IP == addr.IP {
		a.Address = addr
		return
	}
	for i := range a.Extra {
		if a.Extra[i].IP == addr.IP {
			a.Extra[i] = addr
		}
	}
}

// LogValue makes a key log as one group.
func (k Key) LogValue() slog.Value {
	return slog.GroupValue(slog.String("network", k.Network), slog.String("sandbox_id", k.SandboxID), slog.String("ifname", k.IfName))
}

// LogValue makes a pod log as one group.
func (p Pod) LogValue() slog.Value {
	return slog.GroupValue(slog.String("name", p.Name), slog.String("namespace", p.Namespace), slog.String("uid", p.UID))
}

// CompareKeys orders keys by network, sandbox ID, then interface: the
// order of every listing of assignments and of a journal record.
func CompareKeys(a, b Key) int {
	return cmp.Or(cmp.Compare(a.Network, b.Network), cmp.Compare(a.SandboxID, b.SandboxID), cmp.Compare(a.IfName, b.IfName))
}
