package reclaim

import (
	"fmt"
	"strings"
	"time"

	"github.com/sandboxipam/sandboxipam/cluster/api/ipamdlease"
)

// Input is what Decide judges one block on.
type Input struct {
	// Block names the block; BlockNodeName and BlockNodeUID are its claim.
	Block, BlockCIDR, BlockNodeName, BlockNodeUID string
	// NodeUID is the UID of the Node named BlockNodeName; NodeExists false
	// when there is none.
	NodeExists bool
	NodeUID    string
	// Lease is the node's Lease in kube-node-lease as the reclaimer has
	// watched it.
	Lease LeaseSeen
	// IpamdLease names the node's ipamd Lease ("namespace/name"), and
	// Ipamd is what the reclaimer has watched of it.
	IpamdLease string
	Ipamd      LeaseSeen
	// Pods are the pods (namespace/name address) with an address inside
	// the block, whatever their phase.
	Pods []string
	// Alive is what the node's ipamd said on the data plane, and the
	// operator's word on the block: condition (e) (nodeDead, alive.go).
	Alive AliveSeen
	// Now and Grace are the reclaimer's clock and grace.
	Now   time.Time
	Grace time.Duration
}

// LeaseSeen is what the reclaimer has seen of a node's Lease.
type LeaseSeen struct {
	// Present says whether the Lease exists; RenewTime is its
	// spec.renewTime (the kubelet's clock), zero when unset.
	Present   bool
	RenewTime time.Time
	// Since is when, by the reclaimer's clock, the Lease was last seen to
	// change (or to appear, or to go), or when the reclaimer first looked.
	Since time.Time
	// Duration is the longest spec.leaseDurationSeconds seen of the Lease,
	// kept when it is deleted; 0 when none was seen. ipamd writes how long
	// after a renew it may still hand out addresses (its fence plus its
	// renew interval); ipamdlease.ReclaimWait makes it the wait when it
	// is longer than the grace, and assumes the longest ipamd accepts
	// when none was seen.
	Duration time.Duration
}

// Verdict is Decide's answer: reclaim, with the evidence, or keep, and why.
type Verdict struct {
	Reclaim bool `json:"reclaim"`
	// Evidence names what proves the block free, one item per condition,
	// when Reclaim.
	Evidence []string `json:"evidence,omitempty"`
	// Keep says why the block stays, when not Reclaim.
	Keep string `json:"keep,omitempty"`
}

// Decide judges one block. It is pure, and it reclaims only when all
// five conditions hold; the first that fails is the reason to keep.
func Decide(in Input) Verdict {
	node, ok := nodeGone(in)
	if !ok {
		return Verdict{Keep: node}
	}
	lease, ok := leaseExpired(in)
	if !ok {
		return Verdict{Keep: lease}
	}
	if len(in.Pods) > 0 {
		return Verdict{Keep: fmt.Sprintf("pods still hold addresses in %s: %s", in.BlockCIDR, strings.Join(in.Pods, ", "))}
	}
	ipamd, ok := ipamdStopped(in)
	if !ok {
		return Verdict{Keep: ipamd}
	}
	dead, ok := nodeDead(in)
	if !ok {
		return Verdict{Keep: dead}
	}
	return Verdict{Reclaim: true, Evidence: []string{node, lease, "no Pod has a status.podIPs address in " + in.BlockCIDR, ipamd, dead}}
}

// nodeGone is condition (a), in words either way.
func nodeGone(in Input) (string, bool) {
	switch {
	case !in.NodeExists:
		return fmt.Sprintf("Node %s (UID %s) does not exist", in.BlockNodeName, in.BlockNodeUID), true
	case in.NodeUID != in.BlockNodeUID:
		return fmt.Sprintf("Node %s has UID %s, not the claim's %s (registered again)", in.BlockNodeName, in.NodeUID, in.BlockNodeUID), true
	default:
		return fmt.Sprintf("Node %s exists with the block's UID %s", in.BlockNodeName, in.BlockNodeUID), false
	}
}

// leaseExpired is condition (b): unchanged in the reclaimer's sight for
// longer than the grace, and, when present, renewed longer ago than the
// grace by its own time.
func leaseExpired(in Input) (string, bool) {
	name := "Lease kube-node-lease/" + in.BlockNodeName
	quiet := in.Now.Sub(in.Lease.Since)
	if !in.Lease.Present {
		if quiet <= in.Grace {
			return fmt.Sprintf("%s absent, but only for %s in the reclaimer's sight, not longer than the grace %s", name, quiet, in.Grace), false
		}
		return fmt.Sprintf("%s absent for %s in the reclaimer's sight, longer than the grace %s", name, quiet, in.Grace), true
	}
	renewed := "never renewed"
	age := time.Duration(1<<63 - 1)
	if !in.Lease.RenewTime.IsZero() {
		age = in.Now.Sub(in.Lease.RenewTime)
		renewed = "renewed at " + in.Lease.RenewTime.UTC().Format(time.RFC3339)
	}
	if quiet <= in.Grace || age <= in.Grace {
		return fmt.Sprintf("%s %s and last seen to change %s ago: within the grace %s", name, renewed, quiet, in.Grace), false
	}
	return fmt.Sprintf("%s %s, unchanged for %s in the reclaimer's sight, longer than the grace %s", name, renewed, quiet, in.Grace), true
}

// ipamdStopped is condition (d): the node's ipamd Lease unchanged (or
// absent) in the reclaimer's sight for longer than ipamdWait. Only the
// reclaimer's clock counts: spec.renewTime is the node's clock, and a
// node cut off from the API server cannot be asked.
func ipamdStopped(in Input) (string, bool) {
	name := "ipamd Lease " + in.IpamdLease
	wait, words := ipamdWait(in)
	quiet := in.Now.Sub(in.Ipamd.Since)
	switch {
	case !in.Ipamd.Present && quiet <= wait:
		return fmt.Sprintf("%s absent, but only for %s in the reclaimer's sight, not longer than %s", name, quiet, words), false
	case !in.Ipamd.Present:
		return fmt.Sprintf("%s absent for %s in the reclaimer's sight, longer than %s", name, quiet, words), true
	case quiet <= wait:
		return fmt.Sprintf("%s last seen to change %s ago, within %s: ipamd may live", name, quiet, words), false
	default:
		return fmt.Sprintf("%s unchanged for %s in the reclaimer's sight, longer than %s", name, quiet, words), true
	}
}

// ipamdWait is how long condition (d) waits (ipamdlease.ReclaimWait), in
// words: the grace, or, when longer, the Lease's duration (the longest
// ipamd accepts when none was seen) with the clocks' rate error.
func ipamdWait(in Input) (time.Duration, string) {
	wait := ipamdlease.ReclaimWait(in.Grace, in.Ipamd.Duration)
	switch {
	case wait == in.Grace:
		return wait, fmt.Sprintf("the grace %s", in.Grace)
	case in.Ipamd.Duration > 0:
		return wait, fmt.Sprintf("%s: its leaseDuration %s with clock-rate error %g%% (longer than the grace %s)",
			wait, in.Ipamd.Duration, ipamdlease.ClockRateError*100, in.Grace)
	default:
		return wait, fmt.Sprintf("%s: no leaseDuration seen, so the longest ipamd accepts, %s, with clock-rate error %g%% (longer than the grace %s)",
			wait, ipamdlease.MaxLeaseDuration, ipamdlease.ClockRateError*100, in.Grace)
	}
}
