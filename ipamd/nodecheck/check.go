// Package nodecheck compares, on one node, what ipamd records (its
// assignments), what the container runtime lists (its sandboxes, through
// ipamd's adapter) and what the kernel shows (the host veths and /32 or
// /128 routes the CNI plugin made for each pod, and where cheap the
// address inside each sandbox's network namespace), and says each
// disagreement in words. `ipamctl check` prints the result.
//
// Compare is a pure function of three snapshots, read through the one
// join.Join that the reconciler and the datastore's proof judge by:
// an address the datastore would quarantine (a Contested row) is a
// two-holders disagreement here, so the check cannot call fine what the
// reconciler quarantines. The caller takes the snapshots
// without any lock (see package introspect: the assignments are read
// before and after the runtime and the node, and a pass whose two reads
// differ is retried and, if changes keep racing it, reported as raced).
// A pod whose ADD is still being wired has an assignment and no route yet,
// and a sandbox being created has no address yet: both are left out while
// younger than Input.Settle, and counted in Report.Settling.
//
// See docs/architecture.md for where this package sits.
package nodecheck

import (
	"cmp"
	"fmt"
	"net/netip"
	"slices"
	"time"

	"github.com/sandboxipam/sandboxipam/ipamd/datastore"
	"github.com/sandboxipam/sandboxipam/ipamd/hostlinks"
	"github.com/sandboxipam/sandboxipam/ipamd/join"
	"github.com/sandboxipam/sandboxipam/runtime"
)

// Kind names one kind of disagreement; it is stable for scripts (-o json).
type Kind string

// Kinds of disagreement.
const (
	// NoRoute: ipamd assigned the address, but the node has no route to it
	// through the sandbox's host veth (or no such veth).
	NoRoute Kind = "assigned-no-route"
	// UnheldRoute: the node routes an address through a pod veth, and
	// ipamd records nobody holding it.
	UnheldRoute Kind = "route-unheld"
	// SandboxNoAddress: the runtime lists a running pod-network sandbox,
	// and ipamd holds no address for it.
	SandboxNoAddress Kind = "sandbox-no-address"
	// SandboxGone: ipamd holds an address for a sandbox the runtime does
	// not list (the reconciler frees it after the grace; until then it is
	// a possible leak).
	SandboxGone Kind = "sandbox-gone"
	// TwoHolders: two sandboxes or links hold one address, by any of the
	// three sources.
	TwoHolders Kind = "two-holders"
	// RuntimeIPDiffers: the runtime reports other IPs for a sandbox than
	// the one ipamd assigned it.
	RuntimeIPDiffers Kind = "runtime-ip-differs"
	// NotInNetNS: the sandbox's network namespace does not have the
	// address ipamd assigned it.
	NotInNetNS Kind = "not-in-netns"
)

// Disagreement is one thing the sources do not agree on.
type Disagreement struct {
	Kind      Kind   `json:"kind"`
	Address   string `json:"address,omitempty"`
	SandboxID string `json:"sandboxID,omitempty"`
	Link      string `json:"link,omitempty"`
	// Words says it for a person.
	Words string `json:"words"`
}

// Input is the three snapshots and how to read them.
type Input struct {
	Assignments []datastore.Assignment
	// Sandboxes is the runtime's listing; nil with SandboxesErr set when
	// it failed (the runtime's side is then not compared).
	Sandboxes    []runtime.Sandbox
	SandboxesErr error
	// Node is the node's pod links; nil with NodeErr set when it could
	// not be read, or nil alone when the plugin runs as IPAM only.
	Node    *hostlinks.Snapshot
	NodeErr error
	// NetNS reads a sandbox's addresses by its netns path; nil skips it.
	NetNS func(path string) ([]netip.Addr, error)
	// Deleted holds the sandbox IDs whose DEL ipamd answered
	// (Store.DeletedSandboxes): a stopped one's report of an address is
	// stale, as the reconciler judges it too.
	Deleted map[string]struct{}
	// VethPrefix is the plugin's hostVethPrefix.
	VethPrefix string
	// Now and Settle: see the package doc.
	Now    time.Time
	Settle time.Duration
}

// Report is the outcome of one comparison.
type Report struct {
	Assignments int `json:"assignments"`
	Sandboxes   int `json:"sandboxes"`
	PodLinks    int `json:"podLinks"`
	// Settling counts assignments and sandboxes left out because they
	// are younger than the settle time.
	Settling      int            `json:"settling"`
	Disagreements []Disagreement `json:"disagreements"`
	// NotCompared names each source that could not be read, and why: a
	// check that could not look there must not pass (ipamctl check exits
	// 3 on it when there is no disagreement).
	NotCompared []NotCompared `json:"notCompared,omitempty"`
	// Notes say what else the reader should know: a source there is
	// nothing of to compare (the plugin as IPAM only), a raced check.
	Notes []string `json:"notes,omitempty"`
}

// Source names one of the snapshots besides ipamd's own assignments.
type Source string

// Sources a check compares with ipamd's assignments.
const (
	SourceRuntime Source = "runtime" // the runtime's sandboxes
	SourceKernel  Source = "kernel"  // the node's pod links and routes
)

// NotCompared is a source the check could not read.
type NotCompared struct {
	Source Source `json:"source"`
	Reason string `json:"reason"`
}

// Compare finds the disagreements between the three snapshots, sorted by
// address, then kind, then sandbox. It reads them through the one
// join.Join the reconciler and the datastore's proof use, so what it
// calls a disagreement is what they act on.
func Compare(in Input) Report {
	c := &comparison{in: in, rep: Report{Assignments: len(in.Assignments), Disagreements: []Disagreement{}}}
	nv := join.Input{Assignments: datastore.JoinAssignments(in.Assignments), VethPrefix: in.VethPrefix, Deleted: in.Deleted}
	runtimeRead := in.SandboxesErr == nil
	nodeRead := in.NodeErr == nil && in.Node != nil
	if runtimeRead {
		nv.Sandboxes = in.Sandboxes
	}
	if nodeRead {
		nv.Links = in.Node.Links
	}
	c.view = join.Join(nv)
	c.addrs = c.view.Addresses()
	if runtimeRead {
		c.rep.Sandboxes = len(in.Sandboxes)
		c.compareRuntime()
	} else {
		c.notCompared(SourceRuntime, in.SandboxesErr)
	}
	switch {
	case in.NodeErr != nil:
		c.notCompared(SourceKernel, in.NodeErr)
	case in.Node == nil:
		// Nothing of the kernel's is ipamd's to compare: a note, not a
		// source the check failed to read.
		c.note("the kernel's side was not compared: the plugin runs as IPAM only, so pods have no link of its own")
	default:
		c.rep.PodLinks = len(in.Node.Links)
		c.compareNode()
	}
	c.twoHolders()
	slices.SortFunc(c.rep.Disagreements, func(a, b Disagreement) int {
		return cmp.Or(compareAddr(a.Address, b.Address), cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.SandboxID, b.SandboxID), cmp.Compare(a.Link, b.Link))
	})
	return c.rep
}

type comparison struct {
	in    Input
	rep   Report
	view  join.View
	addrs []join.AddressRow // view.Addresses()
}

func (c *comparison) note(format string, args ...any) {
	c.rep.Notes = append(c.rep.Notes, fmt.Sprintf(format, args...))
}

func (c *comparison) notCompared(src Source, why error) {
	c.rep.NotCompared = append(c.rep.NotCompared, NotCompared{Source: src, Reason: why.Error()})
}

func (c *comparison) add(d Disagreement) { c.rep.Disagreements = append(c.rep.Disagreements, d) }

func (c *comparison) settling(since time.Time) bool {
	if !since.IsZero() && c.in.Now.Sub(since) < c.in.Settle {
		c.rep.Settling++
		return true
	}
	return false
}

// recorded reports whether an assignment records ip.
func (c *comparison) recorded(ip netip.Addr) bool {
	i, ok := slices.BinarySearchFunc(c.addrs, ip, func(r join.AddressRow, ip netip.Addr) int { return r.IP.Compare(ip) })
	return ok && len(c.addrs[i].Recorded) > 0
}
