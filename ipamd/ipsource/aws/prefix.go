package aws

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"slices"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/sandboxipam/sandboxipam/ipamd/ipsource"
)

// Prefix delegation (Config.EnablePrefixDelegation) fills each ENI slot
// with a /28 prefix, 16 pod addresses, instead of one secondary address,
// as the VPC CNI does: an instance type's pod density grows sixteenfold
// and a pool of 100 pods costs a handful of EC2 calls. Each prefix is one
// block of the datastore's pool (ipsource.Range); the targets still count
// addresses, so growth asks for the shortfall rounded up to whole
// prefixes. A prefix goes back to EC2 only after the datastore removed it
// (RemoveRange), which it does only when no address in it is assigned,
// cooling or quarantined.
//
// IPv6 mode (Config.EnableIPv6) puts one /80 prefix on the primary ENI
// and pods get addresses from it; 2^48 addresses need no warm target.

// readPrefixes fills the ENI's delegated prefixes from EC2's answer.
func (e *eni) readPrefixes(ni types.NetworkInterface) error {
	for _, p := range ni.Ipv4Prefixes {
		prefix, err := netip.ParsePrefix(awssdk.ToString(p.Ipv4Prefix))
		if err != nil {
			return fmt.Errorf("bad IPv4 prefix: %w", err)
		}
		e.prefixes = append(e.prefixes, prefix)
	}
	for _, p := range ni.Ipv6Prefixes {
		prefix, err := netip.ParsePrefix(awssdk.ToString(p.Ipv6Prefix))
		if err != nil {
			return fmt.Errorf("bad IPv6 prefix: %w", err)
		}
		e.ipv6Prefixes = append(e.ipv6Prefixes, prefix)
	}
	return nil
}

// ranges is the ENI's prefixes as blocks of the pool. Every address of a
// delegated prefix is usable: the prefix lies inside the subnet, whose
// reserved addresses EC2 never delegates.
func (e *eni) ranges() []ipsource.Range {
	var out []ipsource.Range
	for _, p := range e.prefixes {
		out = append(out, ipsource.Range{Prefix: p, Subnet: e.subnetCIDR.Masked(), Group: e.id})
	}
	for _, p := range e.ipv6Prefixes {
		out = append(out, ipsource.Range{Prefix: p, Subnet: p, Group: e.id})
	}
	return out
}

// usedSlots counts the ENI's secondary slots in use.
func (e *eni) usedSlots() int { return len(e.ips) + len(e.prefixes) }

// growPrefixes adds the shortfall rounded up to whole prefixes: on the
// first ENI with a free slot, else on a new ENI. It returns how many
// addresses it added.
func (s *Source) growPrefixes(ctx context.Context, short int) (int, error) {
	want := (short + prefixSize - 1) / prefixSize
	for _, e := range s.sortedENIs() {
		if room := s.slotsPerENI() - e.usedSlots(); room > 0 {
			return s.assignPrefixesTo(ctx, e, min(want, room))
		}
	}
	if s.slotsPerENI() < 1 || len(s.enis)+len(s.foreign) >= s.maxENIs() {
		return 0, fmt.Errorf("%w: %s allows %d ENIs x %d /28 prefixes (%d addresses in all) and the pool needs %d more",
			ErrInstanceLimitReached, s.id.instanceType, s.maxENIs(), s.slotsPerENI(), s.capacity(), short)
	}
	return s.addENIWithPrefixes(ctx, min(want, s.slotsPerENI()))
}

func (s *Source) assignPrefixesTo(ctx context.Context, e *eni, n int) (int, error) {
	prefixes, err := assignInto(s, &e.prefixes, func() ([]netip.Prefix, error) { return s.ec2.assignPrefixes(ctx, e.id, n) },
		func(answer []netip.Prefix) ([]netip.Prefix, error) { return s.checkPrefixes(ctx, e, answer) })
	if err != nil {
		return 0, err
	}
	s.log.Info("IPv4 prefixes assigned", slog.String("eni", e.id), slog.Any("prefixes", prefixes))
	return len(prefixes) * prefixSize, s.addPrefixesToPool(ctx, e, prefixes)
}

func (s *Source) addENIWithPrefixes(ctx context.Context, n int) (int, error) {
	e, err := s.attachNewENI(ctx, n, true)
	if err != nil {
		return 0, err
	}
	s.log.Info("ENI attached with IPv4 prefixes", slog.String("eni", e.id), slog.Int("deviceIndex", e.deviceIndex), slog.Any("prefixes", e.prefixes))
	return len(e.prefixes) * prefixSize, s.addPrefixesToPool(ctx, e, e.prefixes)
}

func (s *Source) addPrefixesToPool(ctx context.Context, e *eni, prefixes []netip.Prefix) error {
	one := &eni{id: e.id, subnetCIDR: e.subnetCIDR, prefixes: prefixes}
	if err := s.pool.AddRanges(ctx, one.ranges()); err != nil {
		s.setNeedResync()
		return fmt.Errorf("put %d prefixes of %s in the pool: %w", len(prefixes), e.id, err)
	}
	return nil
}

// releaseFreePrefixes gives prefixes back to EC2, newest ENI and prefix
// first, while the targets stay met without them. The datastore removes
// a prefix only when none of its addresses is held, cooling or
// quarantined; one it refuses stays.
func (s *Source) releaseFreePrefixes(ctx context.Context) (int, error) {
	released := 0
	for _, e := range s.newestENIsFirst() {
		prefixes := slices.Clone(e.prefixes)
		slices.Reverse(prefixes)
		for _, p := range prefixes {
			c := s.counts()
			after := poolCounts{total: c.total - prefixSize, free: c.free - prefixSize}
			if after.free < 0 || s.cfg.shortfall(after, s.perENI()) > 0 {
				return released, nil
			}
			removed, err := s.pool.RemoveRange(ctx, p)
			if err != nil {
				return released, fmt.Errorf("take prefix %s of %s from the pool: %w", p, e.id, err)
			}
			if !removed {
				continue // an address of it is held, cooling or quarantined
			}
			if err := s.ec2.unassignPrefixes(ctx, e.id, []netip.Prefix{p}); err != nil {
				if errorCode(err) == "" {
					s.setNeedResync()
					return released, fmt.Errorf("%w: %w", err, errUnknownOutcome)
				}
				return released, errors.Join(err, s.addPrefixesToPool(ctx, e, []netip.Prefix{p}))
			}
			s.mu.Lock()
			e.prefixes = slices.DeleteFunc(e.prefixes, func(x netip.Prefix) bool { return x == p })
			s.mu.Unlock()
			s.log.Info("IPv4 prefix unassigned", slog.String("eni", e.id), slog.String("prefix", p.String()))
			released++
		}
	}
	return released, nil
}

// ensureIPv6Prefix gives the primary ENI its /80 when it has none, and
// puts it in the pool.
func (s *Source) ensureIPv6Prefix(ctx context.Context) error {
	var primary *eni
	for _, e := range s.sortedENIs() {
		if e.primary {
			primary = e
		}
	}
	if primary == nil {
		return errors.New("aws source: IPv6 mode: the primary ENI is not among the attached ENIs")
	}
	if len(primary.ipv6Prefixes) > 0 {
		return nil
	}
	prefixes, err := s.ec2.assignIPv6Prefix(ctx, primary.id)
	if err != nil {
		return s.classifyGrowthError(err)
	}
	s.mu.Lock()
	primary.ipv6Prefixes = append(primary.ipv6Prefixes, prefixes...)
	s.mu.Unlock()
	s.log.Info("IPv6 prefix assigned", slog.String("eni", primary.id), slog.Any("prefixes", prefixes))
	one := &eni{id: primary.id, ipv6Prefixes: prefixes}
	if err := s.pool.AddRanges(ctx, one.ranges()); err != nil {
		s.setNeedResync()
		return fmt.Errorf("put IPv6 prefix %v of %s in the pool: %w", prefixes, primary.id, err)
	}
	return nil
}
