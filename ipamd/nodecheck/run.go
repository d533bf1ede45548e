package nodecheck

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"time"

	"github.com/sandboxipam/sandboxipam/ipamd/datastore"
	"github.com/sandboxipam/sandboxipam/ipamd/hostlinks"
	"github.com/sandboxipam/sandboxipam/runtime"
)

// DefaultAttempts is how often Run takes the snapshots before it reports
// a check that changes kept racing.
const DefaultAttempts = 3

// Sources are where Run reads the three snapshots.
type Sources struct {
	// Assignments reads ipamd's assignments. Required.
	Assignments func() []datastore.Assignment
	// Sandboxes lists the runtime's sandboxes; nil means there is no
	// adapter to ask.
	Sandboxes func(ctx context.Context) ([]runtime.Sandbox, error)
	// Node reads the node's pod links; nil means the plugin runs as IPAM
	// only and pods have no link of its own.
	Node func(ctx context.Context) (hostlinks.Snapshot, error)
	// Deleted returns the sandbox IDs whose DEL ipamd answered
	// (Store.DeletedSandboxes); nil means none.
	Deleted func() map[string]struct{}
	// NetNS, VethPrefix, Settle: as in Input.
	NetNS      func(path string) ([]netip.Addr, error)
	VethPrefix string
	Settle     time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Outcome is a Report with how it was taken.
type Outcome struct {
	Report
	At time.Time
	// Attempts and Raced: see api.Check.
	Attempts int
	Raced    bool
}

// Run takes the snapshots without a lock: ipamd's assignments, the
// node's pod links, the runtime's listing, the pod links and the
// assignments again. When the two reads of either differ, a change raced
// the check and it starts over, up to DefaultAttempts times; the last
// attempt is reported with Raced set.
func Run(ctx context.Context, src Sources) Outcome {
	if src.Now == nil {
		src.Now = time.Now
	}
	var out Outcome
	for out.Attempts < DefaultAttempts {
		out.Attempts++
		in, stable := snapshot(ctx, src)
		out.At, out.Report, out.Raced = in.Now, Compare(in), !stable
		if stable || ctx.Err() != nil {
			break
		}
	}
	if out.Raced {
		out.Notes = append(out.Notes, fmt.Sprintf("ipamd's assignments or the node's pod links changed while the check read them, %d times in a row: a disagreement may be that change in flight; run the check again", out.Attempts))
	}
	return out
}

func snapshot(ctx context.Context, src Sources) (Input, bool) {
	in := Input{NetNS: src.NetNS, VethPrefix: src.VethPrefix, Settle: src.Settle}
	before := src.Assignments()
	var nodeBefore hostlinks.Snapshot
	if src.Node != nil {
		nodeBefore, in.NodeErr = src.Node(ctx)
	}
	if src.Sandboxes == nil {
		in.SandboxesErr = fmt.Errorf("ipamd has no runtime adapter to list sandboxes")
	} else if in.Sandboxes, in.SandboxesErr = src.Sandboxes(ctx); in.SandboxesErr != nil {
		in.SandboxesErr = fmt.Errorf("list sandboxes: %w", in.SandboxesErr)
	}
	stable := true
	if src.Node != nil && in.NodeErr == nil {
		nodeAfter, err := src.Node(ctx)
		switch {
		case err != nil:
			in.NodeErr = err
		default:
			stable = sameLinks(nodeBefore, nodeAfter)
			in.Node = &nodeAfter
		}
	}
	in.Assignments = src.Assignments()
	if src.Deleted != nil {
		in.Deleted = src.Deleted()
	}
	in.Now = src.Now()
	return in, stable && sameAssignments(before, in.Assignments)
}

func sameAssignments(a, b []datastore.Assignment) bool {
	return slices.EqualFunc(a, b, func(x, y datastore.Assignment) bool {
		return x.Key == y.Key && slices.Equal(x.IPs(), y.IPs()) && x.AssignedAt.Equal(y.AssignedAt)
	})
}

func sameLinks(a, b hostlinks.Snapshot) bool {
	if len(a.Links) != len(b.Links) {
		return false
	}
	for name, ips := range a.Links {
		other, ok := b.Links[name]
		if !ok || !slices.Equal(sortedAddrs(ips), sortedAddrs(other)) {
			return false
		}
	}
	return true
}

func sortedAddrs(ips []netip.Addr) []netip.Addr {
	out := slices.Clone(ips)
	slices.SortFunc(out, netip.Addr.Compare)
	return out
}
