// Package join joins, in one pure function, what ipamd records about a
// node's pod addresses (its assignments) with what the node shows: the
// runtime's sandboxes, the pod links (host veths and their /32 or /128
// routes) and any further evidence a caller read (a sandbox's network
// namespace). Join returns classified rows: one per assignment, one per
// listed pod-network sandbox, one per pod link and one per address.
//
// Three callers judge the node from these rows, and none joins the
// sources itself, so they cannot disagree on who holds what:
//
//   - ipamd/reconcile turns the sandbox and link rows into the evidence it
//     hands the datastore, and picks the assignments a listing no longer
//     shows from the assignment rows;
//   - ipamd/datastore's proof (Store.Observe) joins that evidence with the
//     store's own assignments, under its lock, and adopts or quarantines
//     by the address rows' Class;
//   - ipamd/nodecheck (`ipamctl check`) reports the rows that are not Agreed.
//
// Claims are counted alike everywhere: a stopped sandbox's report of an
// address counts (it may still hold it), unless the store answered that
// sandbox's DEL since (CRI-O keeps reporting a stopped sandbox's old
// address: see Input.Deleted). A host-network sandbox owns no pod
// address: it claims nothing.
//
// No I/O and no clock: the caller reads every source first. See
// docs/architecture.md for where this package sits.
package join

import (
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/sandboxipam/sandboxipam/ipamd/api/hostveth"
	"github.com/sandboxipam/sandboxipam/runtime"
)

// DefaultIfName is the interface of a listed sandbox's attachment when
// Input.IfName is empty.
const DefaultIfName = "eth0"

// Assignment is what Join needs of one of ipamd's assignments.
type Assignment struct {
	Network, SandboxID, IfName string
	// IPs holds one address per family, as the store hands them.
	IPs []netip.Addr
	// IPAMOnly: another main plugin wired the pod, so it has no pod link
	// of ours and a missing link says nothing.
	IPAMOnly bool
	// AssignedAt and ListedAt are the assignment's (zero ListedAt: no
	// listing has shown its sandbox yet).
	AssignedAt, ListedAt time.Time
}

// Holding is further evidence that a sandbox (or, with an empty
// SandboxID, a pod link nobody owns) holds an address.
type Holding struct {
	IP        netip.Addr
	SandboxID string
	// Ready: the sandbox runs.
	Ready bool
	// Source says where the evidence came from, for the log.
	Source string
}

// Input is the node's sources, read by the caller.
type Input struct {
	Assignments []Assignment
	// Sandboxes is a successful listing; nil when there was none.
	Sandboxes []runtime.Sandbox
	// Links is the node's pod links: veth name to the addresses it
	// routes; nil when they were not read.
	Links map[string][]netip.Addr
	// Holdings is further evidence, claimed as given.
	Holdings []Holding
	// Deleted holds the sandbox IDs whose DEL the store answered: a
	// stopped one's report of an address is stale, and claims nothing.
	Deleted map[string]struct{}
	// VethPrefix is the plugin's hostVethPrefix; IfName the interface of
	// a listed sandbox's attachment (default DefaultIfName).
	VethPrefix, IfName string
	// LinkName names an attachment's pod link; nil means hostveth.Name
	// with VethPrefix. A name is a SHA-256: a caller that joins every
	// pass may pass a memo of hostveth.Name (it must return the same).
	LinkName func(sandboxID, ifName string) string
}

// View is Join's answer.
type View struct {
	// Assignments has a row per assignment, in input order.
	Assignments []AssignmentRow
	// Sandboxes has a row per listed pod-network sandbox, in listing order.
	Sandboxes []SandboxRow
	// Links has a row per pod link, sorted by name.
	Links []LinkRow
	// byKey indexes assignments by network, sandbox and interface.
	byKey map[[3]string]int
	// in is what was joined, for Addresses.
	in Input
}

// AssignmentRow is one assignment and what the node shows of it.
type AssignmentRow struct {
	Assignment
	// Sandbox is the listed sandbox of the same ID, host-network ones
	// included; nil when the listing does not show it.
	Sandbox *runtime.Sandbox
	// Link is the assignment's pod link (empty when Input.Links is nil);
	// LinkFound says whether the node has it, and LinkIPs what it routes.
	Link      string
	LinkFound bool
	LinkIPs   []netip.Addr
}

// PodListed reports whether the listing shows the assignment's sandbox as
// a pod-network sandbox.
func (r AssignmentRow) PodListed() bool { return r.Sandbox != nil && !r.Sandbox.HostNetwork }

// Listed reports whether the listing shows the assignment's sandbox at all.
func (r AssignmentRow) Listed() bool { return r.Sandbox != nil }

// SandboxRow is one listed pod-network sandbox and what holds for it.
type SandboxRow struct {
	Sandbox runtime.Sandbox
	// Assignments indexes View.Assignments: those under its ID.
	Assignments []int
	// Link is its pod link (for Input.IfName); LinkFound and LinkIPs as
	// in AssignmentRow.
	Link      string
	LinkFound bool
	LinkIPs   []netip.Addr
}

// LinkRow is one pod link on the node.
type LinkRow struct {
	Name string
	IPs  []netip.Addr
	// Owner is the sandbox whose attachment it is: by an assignment, else
	// by a listed sandbox; empty when nobody owns it.
	Owner string
	// Assigned: an assignment owns it. Listed: it is a listed sandbox's.
	Assigned, Listed bool
}

// Join joins the sources into rows. It is pure and O(n) in the sources
// (the address rows: see View.Addresses).
func Join(in Input) View {
	if in.IfName == "" {
		in.IfName = DefaultIfName
	}
	linkName := in.LinkName
	if linkName == nil {
		linkName = func(sandboxID, ifName string) string { return hostveth.Name(in.VethPrefix, sandboxID, ifName) }
	}
	v := View{byKey: make(map[[3]string]int, len(in.Assignments))}
	bySandbox := make(map[string][]int, len(in.Assignments))
	linkOwner := make(map[string]string, len(in.Links))
	v.Assignments = make([]AssignmentRow, len(in.Assignments))
	for i, a := range in.Assignments {
		row := AssignmentRow{Assignment: a}
		// A link name is a hash: made only when there are links to match.
		if in.Links != nil {
			row.Link = linkName(a.SandboxID, a.IfName)
			row.LinkIPs, row.LinkFound = in.Links[row.Link]
			linkOwner[row.Link] = a.SandboxID
		}
		v.Assignments[i] = row
		v.byKey[[3]string{a.Network, a.SandboxID, a.IfName}] = i
		bySandbox[a.SandboxID] = append(bySandbox[a.SandboxID], i)
	}
	listedLink := make(map[string]string, len(in.Sandboxes))
	v.Sandboxes = make([]SandboxRow, 0, len(in.Sandboxes))
	for i := range in.Sandboxes {
		sb := &in.Sandboxes[i]
		for _, j := range bySandbox[sb.ID] {
			v.Assignments[j].Sandbox = sb
		}
		if sb.HostNetwork {
			continue
		}
		link := linkName(sb.ID, in.IfName)
		routed, found := in.Links[link]
		listedLink[link] = sb.ID
		v.Sandboxes = append(v.Sandboxes, SandboxRow{Sandbox: *sb, Assignments: bySandbox[sb.ID], Link: link, LinkFound: found, LinkIPs: routed})
	}
	v.Links = joinLinks(in.Links, linkOwner, listedLink)
	v.in = in
	return v
}

// Addresses returns a row per address anything records or claims, sorted.
// Made on each call (the reconciler never needs them; the datastore's
// proof and ipamd/nodecheck do): keep the result.
func (v View) Addresses() []AddressRow { return joinAddresses(v.in, v) }

// Assigned returns the row index of the assignment under network,
// sandbox and interface, if any.
func (v View) Assigned(network, sandboxID, ifName string) (int, bool) {
	i, ok := v.byKey[[3]string{network, sandboxID, ifName}]
	return i, ok
}

func joinLinks(links map[string][]netip.Addr, assigned, listed map[string]string) []LinkRow {
	rows := make([]LinkRow, 0, len(links))
	for name, ips := range links {
		row := LinkRow{Name: name, IPs: ips}
		row.Owner, row.Assigned = assigned[name]
		if id, ok := listed[name]; ok {
			row.Listed = true
			if !row.Assigned {
				row.Owner = id
			}
		}
		rows = append(rows, row)
	}
	slices.SortFunc(rows, func(a, b LinkRow) int { return strings.Compare(a.Name, b.Name) })
	return rows
}
