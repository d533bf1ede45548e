package aws

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"slices"
	"time"

	"github.com/sandboxipam/sandboxipam/ipamd/ipsource"
)

// detachWaits are the pauses before DeleteNetworkInterface is tried again
// while EC2 still reports a just-detached ENI in use.
var detachWaits = []time.Duration{time.Second, 2 * time.Second, 4 * time.Second}

// shrink returns what the targets do not need: whole free ENIs first (two
// calls each, and with WarmENITarget alone the only way it shrinks), then
// single addresses, then ENIs left empty. At most once per ShrinkInterval.
func (s *Source) shrink(ctx context.Context) error {
	now := s.opts.Now()
	if s.tun.ShrinkInterval > 0 && now.Sub(s.lastShrink) < s.tun.ShrinkInterval {
		return nil
	}
	if s.cfg.EnablePrefixDelegation {
		// Prefixes first; an ENI left with none is then detached.
		unassigned, err := s.releaseFreePrefixes(ctx)
		if err != nil {
			return err
		}
		released, err := s.releaseFreeENIs(ctx)
		if err != nil {
			return err
		}
		if released+unassigned > 0 {
			s.lastShrink = now
		}
		return nil
	}
	released, err := s.releaseFreeENIs(ctx)
	if err != nil {
		return err
	}
	unassigned, err := s.unassignSurplus(ctx)
	if err != nil {
		return err
	}
	if unassigned > 0 {
		more, err := s.releaseFreeENIs(ctx)
		if err != nil {
			return err
		}
		released += more
	}
	if released+unassigned > 0 {
		s.lastShrink = now
	}
	return nil
}

// releaseFreeENIs detaches and deletes non-primary ENIs, highest device
// index first, that no pod uses and whose addresses the targets can spare.
func (s *Source) releaseFreeENIs(ctx context.Context) (int, error) {
	released := 0
	for _, e := range s.newestENIsFirst() {
		u := s.usage()[e.id]
		if e.primary || u.Assigned > 0 || u.Cooling > 0 || u.Total != len(e.ips) || len(e.prefixes) > 0 ||
			!s.cfg.canReleaseENI(s.counts(), u.Total, s.perENI()) {
			continue
		}
		ok, err := s.releaseENI(ctx, e)
		if err != nil {
			return released, err
		}
		if ok {
			released++
		}
	}
	return released, nil
}

// releaseENI takes all of e's addresses out of the pool, then detaches and
// deletes it. It reports false, changing nothing, when a pod took one of
// the addresses meanwhile.
func (s *Source) releaseENI(ctx context.Context, e *eni) (bool, error) {
	taken, err := s.pool.TakeFree(ctx, e.id, len(e.ips))
	if err != nil {
		return false, fmt.Errorf("take the addresses of %s from the pool: %w", e.id, err)
	}
	if len(taken) < len(e.ips) {
		return false, s.giveBack(ctx, e, taken)
	}
	if err := s.ec2.detachENI(ctx, e.id, e.attachmentID); err != nil {
		if errorCode(err) == "" {
			s.setNeedResync() // resync drops it from the pool if it did detach
		}
		return false, errors.Join(err, s.giveBack(ctx, e, taken))
	}
	s.mu.Lock()
	delete(s.enis, e.id)
	s.mu.Unlock()
	s.log.Info("ENI detached", slog.String("eni", e.id), slog.Int("addresses", len(taken)))
	s.deleteDetached(ctx, e.id)
	return true, nil
}

// deleteDetached deletes an ENI EC2 may still be detaching. If it cannot,
// the ENI is tagged as this node's, so leaked-ENI clean-up deletes it.
func (s *Source) deleteDetached(ctx context.Context, eniID string) {
	for attempt := 0; ; attempt++ {
		err := s.ec2.deleteENI(ctx, eniID)
		if err == nil {
			return
		}
		if errorCode(err) != codeENIInUse || attempt == len(detachWaits) || !sleep(ctx, detachWaits[attempt]) {
			s.log.Warn("detached ENI left for leaked-ENI clean-up", slog.String("eni", eniID), slog.Any("error", err))
			return
		}
	}
}

// unassignSurplus returns single free addresses, from the ENI with the
// highest device index first so that ENIs empty out and can go.
func (s *Source) unassignSurplus(ctx context.Context) (int, error) {
	surplus := s.cfg.surplus(s.counts())
	done := 0
	for _, e := range s.newestENIsFirst() {
		u := s.usage()[e.id]
		n := min(surplus-done, u.Total-u.Assigned-u.Cooling)
		if n <= 0 {
			continue
		}
		got, err := s.unassignFrom(ctx, e, n)
		done += got
		if err != nil {
			return done, err
		}
	}
	return done, nil
}

func (s *Source) unassignFrom(ctx context.Context, e *eni, n int) (int, error) {
	taken, err := s.pool.TakeFree(ctx, e.id, n)
	if err != nil || len(taken) == 0 {
		return 0, err
	}
	taken, ips := s.withoutPrimaries(e, taken)
	if len(ips) == 0 {
		return 0, nil
	}
	if err := s.ec2.unassignIPs(ctx, e.id, ips); err != nil {
		if errorCode(err) == "" {
			// EC2 may have unassigned them: resync puts back only what
			// the ENI still holds.
			s.setNeedResync()
			return 0, fmt.Errorf("%w: %w", err, errUnknownOutcome)
		}
		return 0, errors.Join(err, s.giveBack(ctx, e, taken))
	}
	s.mu.Lock()
	e.ips = slices.DeleteFunc(e.ips, func(ip netip.Addr) bool { return slices.Contains(ips, ip) })
	s.mu.Unlock()
	s.log.Info("addresses unassigned", slog.String("eni", e.id), slog.Int("count", len(ips)))
	return len(ips), nil
}

// withoutPrimaries drops from taken any primary address (of an ENI, the
// node's own included), which is never unassigned: a pool that holds one
// took it before verify.go's checks existed. It stays out of the pool and
// out of e's list.
func (s *Source) withoutPrimaries(e *eni, taken []ipsource.Address) ([]ipsource.Address, []netip.Addr) {
	primaries := s.primaryAddrs()
	keep := taken[:0:0]
	var ips []netip.Addr
	for _, a := range taken {
		if primaries[a.IP] {
			s.refuse(e.id, a.IP.String(), RefusedPrimary)
			s.mu.Lock()
			e.ips = slices.DeleteFunc(e.ips, func(ip netip.Addr) bool { return ip == a.IP })
			s.mu.Unlock()
			continue
		}
		keep = append(keep, a)
		ips = append(ips, a.IP)
	}
	return keep, ips
}

// giveBack returns taken addresses to the pool after EC2 kept them.
func (s *Source) giveBack(ctx context.Context, e *eni, taken []ipsource.Address) error {
	if len(taken) == 0 {
		return nil
	}
	if err := s.pool.AddAddresses(ctx, taken); err != nil {
		s.setNeedResync()
		return fmt.Errorf("give %d addresses of %s back to the pool: %w", len(taken), e.id, err)
	}
	return nil
}

// sleep waits d or until ctx is done, and reports whether d passed.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
