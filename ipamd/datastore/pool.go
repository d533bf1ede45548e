package datastore

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"slices"

	"github.com/sandboxipam/sandboxipam/ipamd/ipsource"
)

// AddAddresses puts addresses in the pool, or updates the Subnet, Gateway
// and Group of ones already there (and of the assignment holding one, so
// the state reads the same after a restart). While the store is unproven,
// new addresses are quarantined like the rest.
func (s *Store) AddAddresses(ctx context.Context, addrs []ipsource.Address) error {
	for i, a := range addrs {
		if !a.IP.IsValid() {
			return fmt.Errorf("add addresses: addrs[%d]: invalid IP", i)
		}
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return fmt.Errorf("add addresses: %w", ErrClosed)
	}
	for _, a := range addrs {
		s.addLocked(a)
	}
	s.order = nil
	b := s.changedLocked()
	s.mu.Unlock()
	if err := wait(ctx, b); err != nil {
		return fmt.Errorf("add %d addresses: %w", len(addrs), err)
	}
	return nil
}

func (s *Store) addLocked(a ipsource.Address) {
	e, ok := s.addrs[a.IP]
	if !ok {
		s.addrs[a.IP] = &entry{addr: a, inPool: true, quarantined: s.unproven}
		if s.unproven {
			s.marked[a.IP] = struct{}{}
		}
		return
	}
	e.addr, e.inPool = a, true
	if s.unproven && !e.held {
		e.quarantined = true
		s.marked[a.IP] = struct{}{}
	}
	if e.held {
		s.assignments[e.holder].Address = a
	}
	// Only held, cooling and (while proven) quarantined addresses are
	// recorded, so only their record can change: the rest of the pool,
	// added again at every start and refresh, costs the journal nothing.
	if e.held || e.cooling(s.now(), s.cooldown) || (e.quarantined && !s.unproven) {
		s.dirtyIPs[a.IP] = struct{}{}
	}
}

// TakeFree removes up to n free, cooled-down addresses of group from the
// pool, lowest first. Free addresses are not in the checkpoint (the pool
// comes back from the sources at start), so the removal needs no write.
func (s *Store) TakeFree(_ context.Context, group string, n int) ([]ipsource.Address, error) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, fmt.Errorf("take free: %w", ErrClosed)
	}
	now := s.now()
	var taken []ipsource.Address
	for _, ip := range s.sortedPoolLocked() {
		if len(taken) >= n {
			break
		}
		e := s.addrs[ip]
		if e.addr.Group == group && e.allocatable(now, s.cooldown) {
			taken = append(taken, e.addr)
		}
	}
	for _, a := range taken {
		delete(s.addrs, a.IP)
	}
	s.order = nil
	s.mu.Unlock()
	if len(taken) > 0 {
		s.log.Info("addresses taken from the pool", slog.String("group", group), slog.Int("count", len(taken)))
	}
	return taken, nil
}

// Usage reports, per group, the pool's size, assigned and cooling
// addresses, sorted by group.
func (s *Store) Usage() []ipsource.GroupUsage {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	byGroup := map[string]*ipsource.GroupUsage{}
	for _, e := range s.addrs {
		if !e.inPool {
			continue
		}
		u, ok := byGroup[e.addr.Group]
		if !ok {
			u = &ipsource.GroupUsage{Group: e.addr.Group}
			byGroup[e.addr.Group] = u
		}
		u.Total++
		switch {
		case e.held:
			u.Assigned++
		case e.cooling(now, s.cooldown):
			u.Cooling++
		}
	}
	out := make([]ipsource.GroupUsage, 0, len(byGroup))
	for _, u := range byGroup {
		out = append(out, *u)
	}
	slices.SortFunc(out, func(a, b ipsource.GroupUsage) int { return cmp.Compare(a.Group, b.Group) })
	return out
}
