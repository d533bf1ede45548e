package aws

import (
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"slices"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// adjust is one pass of the loop: re-read EC2 if a call's outcome was
// unknown, then grow when the pool is short of its targets, else shrink.
// The caller holds adjustMu.
func (s *Source) adjust(ctx context.Context) error {
	if s.resyncNeeded() {
		if err := s.resync(ctx); err != nil {
			return err
		}
	}
	if s.cfg.EnableIPv6 {
		// One /80 holds 2^48 addresses: nothing to grow or shrink.
		return s.ensureIPv6Prefix(ctx)
	}
	if short := s.cfg.shortfall(s.counts(), s.perENI()); short > 0 {
		err := s.grow(ctx, short)
		s.recordGrowth(err)
		return err
	}
	s.recordGrowth(nil)
	return s.shrink(ctx)
}

// grow adds short addresses: on ENIs with room first, lowest device index
// first, then on new ENIs. With WarmENITarget alone it fills whole ENIs.
// A step that adds nothing (EC2 answered success, the re-read ENI shows
// no new usable address) ends the pass and defers growth (backoff.go):
// every step either adds an address or returns, so a pass makes at most
// short steps, and an EC2 that keeps assigning nothing sees one
// assignment per backoff period, never a hot loop.
func (s *Source) grow(ctx context.Context, short int) error {
	if err := s.growthDeferred(); err != nil {
		return err
	}
	for short > 0 {
		added, err := s.growStep(ctx, short)
		if err != nil {
			return err
		}
		if added == 0 {
			return s.deferGrowth()
		}
		s.growthResumed()
		short -= added
	}
	return nil
}

func (s *Source) growStep(ctx context.Context, short int) (int, error) {
	want := func(room int) int {
		if s.cfg.growsByENI() {
			return room
		}
		return min(room, short)
	}
	if s.cfg.EnablePrefixDelegation {
		return s.growPrefixes(ctx, short)
	}
	if e, room := s.eniWithRoom(); e != nil {
		return s.assignTo(ctx, e, want(room))
	}
	if s.perENI() < 1 || len(s.enis)+len(s.foreign) >= s.maxENIs() {
		return 0, fmt.Errorf("%w: %s allows %d ENIs x %d pod addresses (%d in all) and the pool needs %d more",
			ErrInstanceLimitReached, s.id.instanceType, s.maxENIs(), s.perENI(), s.capacity(), short)
	}
	return s.addENI(ctx, want(s.perENI()))
}

// eniWithRoom returns the managed ENI with the lowest device index that
// can take more addresses, and how many.
func (s *Source) eniWithRoom() (*eni, int) {
	for _, e := range s.sortedENIs() {
		if room := s.perENI() - len(e.ips); room > 0 {
			return e, room
		}
	}
	return nil, 0
}

func (s *Source) assignTo(ctx context.Context, e *eni, n int) (int, error) {
	ips, err := assignInto(s, &e.ips, func() ([]netip.Addr, error) { return s.ec2.assignIPs(ctx, e.id, n) },
		func(answer []netip.Addr) ([]netip.Addr, error) { return s.checkAssigned(ctx, e, answer) })
	if err != nil {
		return 0, err
	}
	s.log.Info("addresses assigned", slog.String("eni", e.id), slog.Int("count", len(ips)))
	return len(ips), s.addToPool(ctx, e, ips)
}

// addENI creates an ENI with n addresses in the primary ENI's subnet and
// security groups, attaches it at the next free device index and puts its
// addresses in the pool.
func (s *Source) addENI(ctx context.Context, n int) (int, error) {
	e, err := s.attachNewENI(ctx, n, false)
	if err != nil {
		return 0, err
	}
	s.log.Info("ENI attached", slog.String("eni", e.id), slog.Int("deviceIndex", e.deviceIndex), slog.Int("addresses", len(e.ips)))
	return len(e.ips), s.addToPool(ctx, e, e.ips)
}

// attachNewENI creates an ENI with n addresses, or n IPv4 prefixes, in the
// primary ENI's subnet and security groups, attaches it at the next free
// device index and records it; the caller puts its addresses in the pool.
func (s *Source) attachNewENI(ctx context.Context, n int, prefixes bool) (*eni, error) {
	created, err := s.ec2.createENI(ctx, s.id.primary.subnetID, s.id.primary.securityGroups, n, prefixes)
	if err != nil {
		return nil, s.classifyGrowthError(err)
	}
	e, err := s.eniFromCreated(created)
	if err != nil {
		return nil, err
	}
	e.deviceIndex = s.nextDeviceIndex()
	if e.attachmentID, err = s.ec2.attachENI(ctx, e.id, e.deviceIndex); err != nil {
		s.discardUnattached(ctx, e.id, err)
		return nil, s.classifyGrowthError(err)
	}
	if err := s.ec2.setDeleteOnTermination(ctx, e.id, e.attachmentID); err != nil {
		// Keep the attached ENI; resync retries the attribute.
		s.setNeedResync()
		s.log.Warn("ENI attached without DeleteOnTermination; retried at the next resync", slog.String("eni", e.id), slog.Any("error", err))
	}
	s.mu.Lock()
	s.enis[e.id] = e
	s.mu.Unlock()
	return e, nil
}

func (s *Source) eniFromCreated(ni types.NetworkInterface) (*eni, error) {
	e := &eni{id: awssdk.ToString(ni.NetworkInterfaceId), subnetID: s.id.primary.subnetID, subnetCIDR: s.id.primary.subnetCIDR}
	for _, p := range ni.PrivateIpAddresses {
		ip, err := netip.ParseAddr(awssdk.ToString(p.PrivateIpAddress))
		if err != nil {
			return nil, fmt.Errorf("created ENI %s: bad private address: %w", e.id, err)
		}
		if awssdk.ToBool(p.Primary) {
			e.primaryIP = ip
		} else {
			e.ips = append(e.ips, ip)
		}
	}
	if err := e.readPrefixes(ni); err != nil {
		return nil, fmt.Errorf("created ENI %s: %w", e.id, err)
	}
	e.ips = s.checkCreated(e)
	return e, nil
}

// discardUnattached deletes an ENI whose attach failed. When the attach's
// outcome is unknown the ENI may be attached after all: resync adopts it
// then, and leaked-ENI clean-up deletes it otherwise.
func (s *Source) discardUnattached(ctx context.Context, eniID string, attachErr error) {
	if errorCode(attachErr) == "" {
		s.setNeedResync()
		return
	}
	if err := s.ec2.deleteENI(ctx, eniID); err != nil {
		s.log.Warn("ENI left for leaked-ENI clean-up", slog.String("eni", eniID), slog.Any("error", err))
	}
}

func (s *Source) addToPool(ctx context.Context, e *eni, ips []netip.Addr) error {
	if err := s.pool.AddAddresses(ctx, e.addresses(ips)); err != nil {
		s.setNeedResync()
		return fmt.Errorf("put %d addresses of %s in the pool: %w", len(ips), e.id, err)
	}
	return nil
}

// classifyGrowthError wraps err with the sentinel a caller branches on.
func (s *Source) classifyGrowthError(err error) error {
	switch errorCode(err) {
	case codeAttachmentLimit:
		return fmt.Errorf("%w: %w", ErrInstanceLimitReached, err)
	case codeSubnetFull, codeNoCidrBlocks:
		return fmt.Errorf("%w: %w", ErrSubnetFull, err)
	case codeAddressLimit:
		// EC2 counts more addresses on the ENI than this source does.
		s.setNeedResync()
		return err
	case "":
		s.setNeedResync()
		return fmt.Errorf("%w: %w", err, errUnknownOutcome)
	}
	return err
}

func (s *Source) nextDeviceIndex() int {
	used := map[int]bool{}
	for _, e := range s.enis {
		used[e.deviceIndex] = true
	}
	for d := range s.foreign {
		used[d] = true
	}
	d := 1
	for used[d] {
		d++
	}
	return d
}

// sortedENIs returns the managed ENIs by device index.
func (s *Source) sortedENIs() []*eni {
	out := make([]*eni, 0, len(s.enis))
	for _, e := range s.enis {
		out = append(out, e)
	}
	slices.SortFunc(out, func(a, b *eni) int { return a.deviceIndex - b.deviceIndex })
	return out
}

// assignInto makes one EC2 assignment, keeps what check accepts of its
// answer (check re-reads the ENI: verify.go) and appends that to an ENI's
// list (addresses or prefixes) under mu, which Status reads.
func assignInto[T any](s *Source, list *[]T, assign func() ([]T, error), check func([]T) ([]T, error)) ([]T, error) {
	answer, err := assign()
	if err != nil {
		return nil, s.classifyGrowthError(err)
	}
	got, err := check(answer)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	*list = append(*list, got...)
	s.mu.Unlock()
	return got, nil
}

// newestENIsFirst is sortedENIs, highest device index first: the order
// in which the pool gives back.
func (s *Source) newestENIsFirst() []*eni {
	enis := s.sortedENIs()
	slices.Reverse(enis)
	return enis
}

func (s *Source) resyncNeeded() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.needResync
}
