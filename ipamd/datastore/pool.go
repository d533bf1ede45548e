package datastore

import (
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"slices"

	"github.com/sandboxipam/sandboxipam/ipamd/datastore/state"
	"github.com/sandboxipam/sandboxipam/ipamd/ipsource"
)

// AddAddresses puts addresses in the pool, each a block of one, or
// updates the Subnet, Gateway and Group of ones already there (and of the
// assignment holding one, so the state reads the same after a restart).
// While the store is unproven, no address is handed out anyway.
func (s *Store) AddAddresses(ctx context.Context, addrs []ipsource.Address) error {
	ranges := make([]ipsource.Range, len(addrs))
	for i, a := range addrs {
		if !a.IP.IsValid() {
			return fmt.Errorf("add addresses: addrs[%d]: invalid IP", i)
		}
		ranges[i] = ipsource.Range{Prefix: netip.PrefixFrom(a.IP, a.IP.BitLen()), Subnet: a.Subnet, Gateway: a.Gateway, Group: a.Group}
	}
	if err := s.AddRanges(ctx, ranges); err != nil {
		return fmt.Errorf("add %d addresses: %w", len(addrs), err)
	}
	return nil
}

// AddRanges puts blocks of addresses in the pool, or updates the block of
// the same prefix (its bounds, exclusions, Subnet, Gateway and Group, and
// the assignments holding its addresses). A block overlapping another is
// refused; the blocks before it in ranges are added.
func (s *Store) AddRanges(ctx context.Context, ranges []ipsource.Range) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return fmt.Errorf("add ranges: %w", ErrClosed)
	}
	var err error
	for i, r := range ranges {
		if err = s.addRangeLocked(r); err != nil {
			err = fmt.Errorf("add ranges: ranges[%d]: %w", i, err)
			break
		}
	}
	b := s.changedLocked()
	s.mu.Unlock()
	if werr := b.Wait(ctx); werr != nil {
		return fmt.Errorf("add %d ranges: %w", len(ranges), werr)
	}
	return err
}

// TakeFree removes up to n free, cooled-down addresses of group from the
// pool, lowest first. Only blocks of one address (AddAddresses) are taken;
// a larger block is never carved. Free addresses are not in the
// checkpoint (the pool comes back from the sources at start), so the
// removal needs no write.
func (s *Store) TakeFree(_ context.Context, group string, n int) ([]ipsource.Address, error) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, fmt.Errorf("take free: %w", ErrClosed)
	}
	if s.st.Unproven() {
		// Every address nobody holds is quarantined until proof: none
		// is free to give back.
		s.mu.Unlock()
		return nil, nil
	}
	now := s.now()
	var taken []ipsource.Address
	kept := s.ranges[:0]
	for _, p := range s.ranges {
		if len(taken) < n && p.single() && p.r.Group == group {
			if !s.st.Taken(p.first, now) {
				taken = append(taken, p.address(p.first))
				s.apply(state.Drop(p.first, now))
				continue
			}
		}
		kept = append(kept, p)
	}
	clear(s.ranges[len(kept):])
	s.ranges = kept
	s.mu.Unlock()
	if len(taken) > 0 {
		s.log.Info("addresses taken from the pool", slog.String("group", group), slog.Int("count", len(taken)))
	}
	return taken, nil
}

// RemoveRange removes the block of prefix when no address in it is held,
// cooling or quarantined (nor the store unproven), and reports whether it
// did. Like TakeFree it needs no write: the pool is not in the
// checkpoint.
func (s *Store) RemoveRange(_ context.Context, prefix netip.Prefix) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false, fmt.Errorf("remove range %s: %w", prefix, ErrClosed)
	}
	if s.st.Unproven() {
		return false, nil
	}
	prefix = prefix.Masked()
	i := slices.IndexFunc(s.ranges, func(p *poolRange) bool { return p.r.Prefix == prefix })
	if i < 0 {
		return false, nil
	}
	p := s.ranges[i]
	now := s.now()
	for ip, e := range s.st.Addresses() {
		if p.contains(ip) && !e.Free(now, s.cooldown) {
			return false, nil
		}
	}
	s.ranges = slices.Delete(s.ranges, i, i+1)
	s.refreshEntriesLocked(p.first, p.last)
	s.log.Info("range taken from the pool", slog.String("range", prefix.String()), slog.String("group", p.r.Group))
	return true, nil
}

// Usage is View().Usage(): the ipsource.Pool's view of the pool.
func (s *Store) Usage() []ipsource.GroupUsage { return s.View().Usage() }

// RangeInfo is one block of the pool, for ipamctl and the metrics.
type RangeInfo struct {
	Range ipsource.Range
	// Family is "ipv4" or "ipv6".
	Family string
	// Size counts the usable addresses, saturating at MaxUint64 (an
	// IPv6 /64 holds 2^64).
	Size uint64
	// Assigned, Cooling and Quarantined count the block's taken
	// addresses; while the store is unproven, Quarantined counts every
	// address of the block nobody holds.
	Assigned, Cooling, Quarantined uint64
	// Free counts what nothing keeps from a pod: none in a retiring
	// block or while the store is unproven.
	Free uint64
	// Retiring: the block is no longer the source's; nothing is handed
	// out of it and it leaves once nothing in it is held.
	Retiring bool
}

// Ranges lists the pool's blocks in address order (View().Ranges).
func (s *Store) Ranges() []RangeInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rangesLocked()
}

func (s *Store) rangesLocked() []RangeInfo {
	now := s.now()
	out := make([]RangeInfo, len(s.ranges))
	for i, p := range s.ranges {
		r := p.r
		r.First, r.Last = p.first, p.last
		out[i] = RangeInfo{Range: r, Family: p.family(), Size: p.size, Retiring: p.retiring}
	}
	for ip, e := range s.st.Addresses() {
		i := s.rangeIndexLocked(ip)
		if i < 0 || !s.ranges[i].contains(ip) {
			continue
		}
		switch {
		case e.Held:
			out[i].Assigned++
		case e.Quarantined:
			out[i].Quarantined++
		case e.Cooling(now, s.cooldown):
			out[i].Cooling++
		}
	}
	if s.st.Unproven() {
		for i := range out {
			if out[i].Retiring {
				continue
			}
			out[i].Quarantined, out[i].Cooling = out[i].Size-out[i].Assigned, 0
		}
	}
	for i := range out {
		r := &out[i]
		if !r.Retiring {
			// Exact, not freeOf's saturation: a block's size is exact
			// below 2^64, and what is taken is subtracted from it.
			r.Free = r.Size - min(r.Size, satAdd(satAdd(r.Assigned, r.Cooling), r.Quarantined))
		}
	}
	return out
}
