package aws

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/netip"
	"slices"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/sandboxipam/sandboxipam/ipamd/ipsource"
)

// resync reads the attached ENIs back from EC2, the truth for which
// addresses each holds, and puts every address of the managed ENIs in the
// pool. At start this is the adoption that lets a restart reuse what
// exists; later it repairs the pool after a call whose outcome was unknown.
func (s *Source) resync(ctx context.Context) error {
	attached, err := s.ec2.attachedENIs(ctx)
	if err != nil {
		return err
	}
	managed, foreign := s.classify(attached)
	s.dropVanished(ctx, managed)
	s.mu.Lock()
	s.enis, s.foreign = managed, foreign
	s.needResync = false
	s.mu.Unlock()
	s.ensureDeleteOnTermination(ctx, attached)
	var addrs []ipsource.Address
	var ranges []ipsource.Range
	for _, e := range managed {
		if s.cfg.EnableIPv6 {
			// IPv6 mode hands out IPv6 only, as the VPC CNI's.
			ranges = append(ranges, (&eni{id: e.id, ipv6Prefixes: e.ipv6Prefixes}).ranges()...)
			continue
		}
		addrs = append(addrs, e.addresses(e.ips)...)
		ranges = append(ranges, e.ranges()...)
	}
	// Delegated prefixes are adopted as blocks: a restart finds the
	// prefixes EC2 lists and keeps every address of them that a pod
	// holds (the datastore's checkpoint has the assignments).
	if len(ranges) > 0 {
		if err := s.pool.AddRanges(ctx, ranges); err != nil {
			s.setNeedResync()
			return fmt.Errorf("put %d adopted prefixes in the pool: %w", len(ranges), err)
		}
	}
	if len(addrs) == 0 {
		return nil
	}
	if err := s.pool.AddAddresses(ctx, addrs); err != nil {
		s.setNeedResync()
		return fmt.Errorf("put %d adopted addresses in the pool: %w", len(addrs), err)
	}
	return nil
}

// classify splits the attached ENIs into those this source manages (the
// primary and the ones it created) and the others, by device index.
func (s *Source) classify(attached []types.NetworkInterface) (map[string]*eni, map[int]string) {
	managed := map[string]*eni{}
	foreign := map[int]string{}
	for _, ni := range attached {
		if ni.Attachment == nil {
			continue // detached between the filter and the answer
		}
		id := awssdk.ToString(ni.NetworkInterfaceId)
		device := int(awssdk.ToInt32(ni.Attachment.DeviceIndex))
		if device != 0 && !s.ownedByThisNode(ni) {
			foreign[device] = id
			continue
		}
		e, err := s.eniFromEC2(ni)
		if err != nil {
			s.log.Warn("attached ENI left alone", slog.String("eni", id), slog.Any("error", err))
			foreign[device] = id
			continue
		}
		if seen, ok := s.id.enis[id]; ok && len(seen.localIPv4s) != 1+len(e.ips) {
			s.log.Debug("IMDS and EC2 disagree on an ENI's addresses; EC2 wins (IMDS lags)",
				slog.String("eni", id), slog.Int("imds", len(seen.localIPv4s)), slog.Int("ec2", 1+len(e.ips)))
		}
		managed[id] = e
	}
	return managed, foreign
}

func (s *Source) ownedByThisNode(ni types.NetworkInterface) bool {
	var node, createdBy string
	for _, t := range ni.TagSet {
		switch awssdk.ToString(t.Key) {
		case TagNode:
			node = awssdk.ToString(t.Value)
		case TagCreatedBy:
			createdBy = awssdk.ToString(t.Value)
		}
	}
	return node == s.id.instanceID && createdBy == createdByValue
}

// eniFromEC2 converts EC2's view of an attached ENI. The subnet's CIDR
// comes from IMDS (EC2 would need DescribeSubnets): the primary's when the
// subnet is the same, else the ENI's own IMDS entry.
func (s *Source) eniFromEC2(ni types.NetworkInterface) (*eni, error) {
	e := &eni{
		id:           awssdk.ToString(ni.NetworkInterfaceId),
		attachmentID: awssdk.ToString(ni.Attachment.AttachmentId),
		deviceIndex:  int(awssdk.ToInt32(ni.Attachment.DeviceIndex)),
		subnetID:     awssdk.ToString(ni.SubnetId),
	}
	e.primary = e.deviceIndex == 0
	switch {
	case e.subnetID == s.id.primary.subnetID:
		e.subnetCIDR = s.id.primary.subnetCIDR
	case s.id.enis[e.id].subnetCIDR.IsValid():
		e.subnetCIDR = s.id.enis[e.id].subnetCIDR
	default:
		return nil, fmt.Errorf("subnet %s has no CIDR in IMDS", e.subnetID)
	}
	for _, p := range ni.PrivateIpAddresses {
		ip, err := netip.ParseAddr(awssdk.ToString(p.PrivateIpAddress))
		if err != nil {
			return nil, fmt.Errorf("bad private address: %w", err)
		}
		if awssdk.ToBool(p.Primary) {
			e.primaryIP = ip
		} else {
			e.ips = append(e.ips, ip)
		}
	}
	if err := e.readPrefixes(ni); err != nil {
		return nil, err
	}
	return e, nil
}

// dropVanished takes out of the pool the free addresses of ENIs that were
// managed here and are no longer attached; addresses pods hold stay (the
// pool never gives those up) until the pods are deleted.
func (s *Source) dropVanished(ctx context.Context, now map[string]*eni) {
	for id, old := range s.enis {
		if _, ok := now[id]; ok {
			continue
		}
		for _, p := range append(slices.Clone(old.prefixes), old.ipv6Prefixes...) {
			removed, err := s.pool.RemoveRange(ctx, p)
			s.log.Warn("a managed ENI is no longer attached; its prefix leaves the pool if no address of it is held",
				slog.String("eni", id), slog.String("prefix", p.String()), slog.Bool("removed", removed), slog.Any("error", err))
		}
		taken, err := s.pool.TakeFree(ctx, id, math.MaxInt32)
		s.log.Warn("a managed ENI is no longer attached; its free addresses left the pool",
			slog.String("eni", id), slog.Int("addresses", len(taken)), slog.Any("error", err))
	}
}

// ensureDeleteOnTermination repairs an attachment whose
// ModifyNetworkInterfaceAttribute failed after AttachNetworkInterface.
func (s *Source) ensureDeleteOnTermination(ctx context.Context, attached []types.NetworkInterface) {
	for _, ni := range attached {
		id := awssdk.ToString(ni.NetworkInterfaceId)
		if _, ok := s.enis[id]; !ok || ni.Attachment == nil || awssdk.ToBool(ni.Attachment.DeleteOnTermination) || !s.ownedByThisNode(ni) {
			continue
		}
		if err := s.ec2.setDeleteOnTermination(ctx, id, awssdk.ToString(ni.Attachment.AttachmentId)); err != nil {
			s.log.Warn("ENI would outlive the instance", slog.String("eni", id), slog.Any("error", err))
		}
	}
}

// addresses turns ips of e into pool addresses.
func (e *eni) addresses(ips []netip.Addr) []ipsource.Address {
	out := make([]ipsource.Address, len(ips))
	for i, ip := range ips {
		out[i] = ipsource.Address{IP: ip, Subnet: e.subnetCIDR.Masked(), Group: e.id}
	}
	return out
}

func (s *Source) setNeedResync() {
	s.mu.Lock()
	s.needResync = true
	s.mu.Unlock()
}

// errUnknownOutcome marks a failed call whose effect in EC2 is not known.
var errUnknownOutcome = errors.New("outcome unknown; the ENIs are re-read from EC2 before the next change")
