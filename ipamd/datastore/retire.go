package datastore

import (
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"slices"

	"github.com/sandboxipam/sandboxipam/ipamd/ipsource"
)

// A retiring block is one a source no longer provides (the podCIDR source
// after its Node was registered again with other podCIDRs) while a pod
// still holds an address of it. Nothing is handed out of it; its held
// addresses stay held and shown (ipamctl pool, the retiring metrics) and
// the block leaves the pool once none is held or quarantined. A retiring
// block that overlaps a current one leaves at once: its held addresses
// stay held as entries, so the current block never hands them out either.

// NodeRecord is the podCIDR source's state kept in the checkpoint, so a
// restart fills the pool without the API server.
type NodeRecord struct {
	// Name and UID identify the Node the ranges are of.
	Name, UID string
	// PodCIDRs are the Node's spec.podCIDRs, the current blocks.
	PodCIDRs []netip.Prefix
	// Retiring are blocks of an earlier UID still in the pool.
	Retiring []netip.Prefix
}

// NodeRecord returns the podCIDR source's record from the checkpoint or the
// last SetNodeRanges, and false when there is none.
func (s *Store) NodeRecord() (NodeRecord, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.node == nil {
		return NodeRecord{}, false
	}
	return *s.nodeCheckpointLocked(), true
}

// NodeRanges is a change SetNodeRanges makes.
type NodeRanges struct {
	// Group is the pool group of the podCIDR source's blocks.
	Group string
	// Name and UID identify the Node.
	Name, UID string
	// Current are the Node's ranges; empty while it has none (a Node
	// deleted, or registered again and not given podCIDRs yet).
	Current []ipsource.Range
	// Retiring are blocks of an earlier UID to put back as retiring
	// (from the checkpoint, at a restart).
	Retiring []ipsource.Range
}

// SetNodeRanges makes nr.Current the pool's blocks of nr.Group, retires
// the group's other blocks (and adds nr.Retiring as retiring), records
// the Node's name, UID and current prefixes, and returns once that is on
// disk. It is the podCIDR source's one way to change the pool, so a Node
// registered again never leaves a moment where an old block hands out an
// address.
func (s *Store) SetNodeRanges(ctx context.Context, nr NodeRanges) error {
	name := nr.Name
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return fmt.Errorf("set node ranges: %w", ErrClosed)
	}
	err := s.setNodeRangesLocked(nr.Group, nr.Current, nr.Retiring)
	if err == nil {
		rec := &NodeRecord{Name: name, UID: nr.UID}
		for _, r := range nr.Current {
			rec.PodCIDRs = append(rec.PodCIDRs, r.Prefix.Masked())
		}
		s.node = rec
		s.commit.NeedFullLocked()
	}
	b := s.changedLocked()
	s.mu.Unlock()
	if err != nil {
		return fmt.Errorf("set node ranges of %s: %w", name, err)
	}
	if werr := b.Wait(ctx); werr != nil {
		return fmt.Errorf("set node ranges of %s: %w", name, werr)
	}
	return nil
}

func (s *Store) setNodeRangesLocked(group string, current, retiring []ipsource.Range) error {
	cur := make([]*poolRange, 0, len(current))
	for i, r := range current {
		if r.Group != group {
			return fmt.Errorf("current[%d]: range %s of group %q, not %q", i, r.Prefix, r.Group, group)
		}
		pr, err := newPoolRange(r)
		if err != nil {
			return fmt.Errorf("current[%d]: %w", i, err)
		}
		for _, o := range cur {
			if o.r.Prefix.Overlaps(pr.r.Prefix) {
				return fmt.Errorf("current[%d]: range %s overlaps %s", i, pr.r.Prefix, o.r.Prefix)
			}
		}
		cur = append(cur, pr)
	}
	overlapsCurrent := func(p netip.Prefix) bool {
		return slices.ContainsFunc(cur, func(c *poolRange) bool { return c.r.Prefix.Overlaps(p) })
	}
	isCurrent := func(p netip.Prefix) bool {
		return slices.ContainsFunc(cur, func(c *poolRange) bool { return c.r.Prefix == p })
	}
	// Retire what is no longer current; a block overlapping a current one
	// (but not the same prefix) leaves at once.
	for _, p := range slices.Clone(s.ranges) {
		switch {
		case p.r.Group != group || isCurrent(p.r.Prefix):
		case overlapsCurrent(p.r.Prefix):
			s.dropRangeLocked(p)
		case !p.retiring:
			p.retiring = true
			s.log.Warn("range retiring: no longer the node's; nothing more is handed out of it, and it leaves the pool once no pod holds an address of it",
				slog.String("range", p.r.Prefix.String()))
		}
	}
	for _, r := range retiring {
		pfx := r.Prefix.Masked()
		if overlapsCurrent(pfx) || slices.ContainsFunc(s.ranges, func(p *poolRange) bool { return p.r.Prefix.Overlaps(pfx) }) {
			continue
		}
		if err := s.addRangeLocked(r); err != nil {
			return fmt.Errorf("retiring range %s: %w", pfx, err)
		}
		s.ranges[slices.IndexFunc(s.ranges, func(p *poolRange) bool { return p.r.Prefix == pfx })].retiring = true
	}
	for i, r := range current {
		if err := s.addRangeLocked(r); err != nil {
			return fmt.Errorf("current[%d]: %w", i, err)
		}
	}
	s.sweepRetiringLocked()
	return nil
}

// dropRangeLocked takes p out of the pool whatever it holds: its held
// addresses stay held as entries outside (or in a new) block.
func (s *Store) dropRangeLocked(p *poolRange) {
	i := slices.Index(s.ranges, p)
	if i < 0 {
		return
	}
	s.ranges = slices.Delete(s.ranges, i, i+1)
	s.refreshEntriesLocked(p.first, p.last)
	s.log.Info("range left the pool", slog.String("range", p.r.Prefix.String()), slog.String("group", p.r.Group))
}

// sweepRetiringLocked removes the retiring blocks no pod holds an address
// of (nor quarantines one); while the store is unproven nothing is known
// free, so nothing leaves.
func (s *Store) sweepRetiringLocked() {
	if s.st.Unproven() || !slices.ContainsFunc(s.ranges, func(p *poolRange) bool { return p.retiring }) {
		return
	}
	busy := map[*poolRange]bool{}
	for ip, e := range s.st.Addresses() {
		if !e.Held && !e.Quarantined {
			continue
		}
		if p := s.rangeForLocked(ip); p != nil && p.retiring {
			busy[p] = true
		}
	}
	for _, p := range slices.Clone(s.ranges) {
		if p.retiring && !busy[p] {
			s.dropRangeLocked(p)
			s.commit.NeedFullLocked()
		}
	}
}

// retiringPrefixesLocked lists the retiring blocks' prefixes, or nil.
func (s *Store) retiringPrefixesLocked() []netip.Prefix {
	var out []netip.Prefix
	for _, p := range s.ranges {
		if p.retiring {
			out = append(out, p.r.Prefix)
		}
	}
	return out
}

// nodeCheckpointLocked is the node record as a snapshot writes it.
func (s *Store) nodeCheckpointLocked() *NodeRecord {
	if s.node == nil {
		return nil
	}
	rec := *s.node
	rec.PodCIDRs = slices.Clone(rec.PodCIDRs)
	// Restored from a checkpoint and not applied yet: the retiring blocks
	// are those of the checkpoint. Once applied, the pool's.
	if rec.Retiring == nil {
		rec.Retiring = s.retiringPrefixesLocked()
	} else {
		rec.Retiring = slices.Clone(rec.Retiring)
	}
	return &rec
}

// SetPoolWaiting records what an empty pool waits for (the podCIDR source:
// "Node X's spec.podCIDRs"); while the pool has no block, Assign fails
// with ErrPoolNotReady naming it, which the CNI plugin answers with code
// 11 (try again later). An empty why clears it.
func (s *Store) SetPoolWaiting(why string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.poolWaiting = why
}

// PoolWaiting is what SetPoolWaiting recorded while the pool has no
// block, or "".
func (s *Store) PoolWaiting() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.familiesLocked()) > 0 {
		return ""
	}
	return s.poolWaiting
}
