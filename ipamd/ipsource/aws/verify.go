package aws

import (
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"slices"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
)

// An EC2 answer is checked before the pool takes anything from it: an
// implementation of EC2 that is not AWS's (or AWS's, wrong once) was seen
// to list in an AssignPrivateIpAddresses answer the ENI's primary address,
// the node's own primary address, addresses outside the subnet and
// addresses already in the pool. Taken as they were, a pod got the ENI's
// primary address and a later shrink sent UnassignPrivateIpAddresses for
// the node's own. So after every assignment the ENI is read back
// (DescribeNetworkInterfaces, as the AWS VPC CNI does after its own
// assignments), and the pool takes only what that re-read shows as new on
// the ENI, in its subnet, and no ENI's primary address. What is refused is
// logged at WARN and counted by reason in ipamd_aws_refused_addresses_total.

// Refusal reasons, the values of ipamd_aws_refused_addresses_total's
// reason label.
const (
	// RefusedPrimary: the primary address of an ENI (the node's own
	// included), or a prefix holding one. Never a pod address, never
	// unassigned.
	RefusedPrimary = "primary"
	// RefusedOutsideSubnet: outside the ENI's subnet.
	RefusedOutsideSubnet = "outside_subnet"
	// RefusedInPool: already held by a managed ENI, so already in the pool.
	RefusedInPool = "already_in_pool"
	// RefusedNotOnENI: listed in the answer, absent from the re-read ENI.
	RefusedNotOnENI = "not_on_eni"
)

// RefusalReasons lists the reasons, exported at zero from the start.
var RefusalReasons = []string{RefusedPrimary, RefusedOutsideSubnet, RefusedInPool, RefusedNotOnENI}

// eniNow is EC2's re-read of one ENI.
type eniNow struct {
	primary     netip.Addr
	secondaries []netip.Addr
	prefixes    []netip.Prefix
}

// reread reads e back from EC2 after an assignment. When that fails the
// assignment's effect is unknown: nothing is taken and resync adopts what
// the ENI holds.
func (s *Source) reread(ctx context.Context, e *eni) (eniNow, error) {
	ni, err := s.ec2.describeENI(ctx, e.id)
	if err != nil {
		s.setNeedResync()
		return eniNow{}, fmt.Errorf("read %s back after an assignment: %w: %w", e.id, err, errUnknownOutcome)
	}
	var now eniNow
	for _, p := range ni.PrivateIpAddresses {
		ip, err := netip.ParseAddr(awssdk.ToString(p.PrivateIpAddress))
		if err != nil {
			s.setNeedResync()
			return eniNow{}, fmt.Errorf("read %s back: bad private address: %w", e.id, err)
		}
		if awssdk.ToBool(p.Primary) {
			now.primary = ip
		} else {
			now.secondaries = append(now.secondaries, ip)
		}
	}
	var prefixes eni
	if err := prefixes.readPrefixes(ni); err != nil {
		s.setNeedResync()
		return eniNow{}, fmt.Errorf("read %s back: %w", e.id, err)
	}
	now.prefixes = prefixes.prefixes
	return now, nil
}

// checkAssigned returns the addresses the pool may take after an
// assignment to e: secondaries of e in EC2's re-read that e did not hold
// before, in e's subnet, no ENI's primary and held by no other managed
// ENI. Addresses the answer listed that fail this are refused; new
// secondaries the answer left out are taken (the re-read is the truth,
// as resync's is).
func (s *Source) checkAssigned(ctx context.Context, e *eni, answer []netip.Addr) ([]netip.Addr, error) {
	now, err := s.reread(ctx, e)
	if err != nil {
		return nil, err
	}
	primaries, held := s.primaryAddrs(), s.heldAddrs()
	primaries[now.primary] = true
	var take []netip.Addr
	for _, ip := range union(answer, now.secondaries) {
		listed := slices.Contains(answer, ip)
		if held[ip] && !listed && slices.Contains(e.ips, ip) {
			continue // e's own, from before: not part of this answer
		}
		reason := ""
		switch {
		case primaries[ip]:
			reason = RefusedPrimary
		case !e.subnetCIDR.Contains(ip):
			reason = RefusedOutsideSubnet
		case held[ip]:
			reason = RefusedInPool
		case !slices.Contains(now.secondaries, ip):
			reason = RefusedNotOnENI
		}
		if reason != "" {
			s.refuse(e.id, ip.String(), reason)
			continue
		}
		if !listed {
			s.log.Warn("EC2's answer left out an address the ENI now holds; taken from the re-read", slog.String("eni", e.id), slog.String("address", ip.String()))
		}
		take = append(take, ip)
	}
	return take, nil
}

// checkPrefixes is checkAssigned for delegated IPv4 prefixes.
func (s *Source) checkPrefixes(ctx context.Context, e *eni, answer []netip.Prefix) ([]netip.Prefix, error) {
	now, err := s.reread(ctx, e)
	if err != nil {
		return nil, err
	}
	primaries, held := s.primaryAddrs(), s.heldPrefixes()
	primaries[now.primary] = true
	var take []netip.Prefix
	for _, p := range union(answer, now.prefixes) {
		listed := slices.Contains(answer, p)
		if held[p] && !listed && slices.Contains(e.prefixes, p) {
			continue
		}
		reason := ""
		switch {
		case containsAny(p, primaries):
			reason = RefusedPrimary
		case p.Bits() < e.subnetCIDR.Bits() || !e.subnetCIDR.Contains(p.Addr()):
			reason = RefusedOutsideSubnet
		case held[p]:
			reason = RefusedInPool
		case !slices.Contains(now.prefixes, p):
			reason = RefusedNotOnENI
		}
		if reason != "" {
			s.refuse(e.id, p.String(), reason)
			continue
		}
		take = append(take, p)
	}
	return take, nil
}

// checkCreated filters a created ENI's secondary addresses as
// checkAssigned does, without a re-read: CreateNetworkInterface's answer
// is itself the ENI's description.
func (s *Source) checkCreated(e *eni) []netip.Addr {
	primaries, held := s.primaryAddrs(), s.heldAddrs()
	primaries[e.primaryIP] = true
	var take []netip.Addr
	for _, ip := range e.ips {
		switch {
		case primaries[ip]:
			s.refuse(e.id, ip.String(), RefusedPrimary)
		case !e.subnetCIDR.Contains(ip):
			s.refuse(e.id, ip.String(), RefusedOutsideSubnet)
		case held[ip]:
			s.refuse(e.id, ip.String(), RefusedInPool)
		default:
			take = append(take, ip)
		}
	}
	return take
}

// primaryAddrs are the primary addresses of the managed ENIs and the
// node's own (IMDS's first address of the device-0 ENI).
func (s *Source) primaryAddrs() map[netip.Addr]bool {
	out := map[netip.Addr]bool{}
	if len(s.id.primary.localIPv4s) > 0 {
		out[s.id.primary.localIPv4s[0]] = true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, e := range s.enis {
		if e.primaryIP.IsValid() {
			out[e.primaryIP] = true
		}
	}
	return out
}

// heldAddrs are the secondary addresses of every managed ENI: the pool's.
func (s *Source) heldAddrs() map[netip.Addr]bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[netip.Addr]bool{}
	for _, e := range s.enis {
		for _, ip := range e.ips {
			out[ip] = true
		}
	}
	return out
}

func (s *Source) heldPrefixes() map[netip.Prefix]bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[netip.Prefix]bool{}
	for _, e := range s.enis {
		for _, p := range e.prefixes {
			out[p] = true
		}
	}
	return out
}

// refuse logs and counts one address or prefix EC2 offered that the pool
// does not take, or that a shrink does not give back.
func (s *Source) refuse(eniID, what, reason string) {
	s.refused.WithLabelValues(reason).Inc()
	s.log.Warn("EC2 offered an address that is not this node's to use; refused",
		slog.String("eni", eniID), slog.String("address", what), slog.String("reason", reason))
}

// union is a's elements then those of b not in a, each once.
func union[T comparable](a, b []T) []T {
	var out []T
	for _, x := range append(slices.Clone(a), b...) {
		if !slices.Contains(out, x) {
			out = append(out, x)
		}
	}
	return out
}

func containsAny(p netip.Prefix, addrs map[netip.Addr]bool) bool {
	for a := range addrs {
		if p.Contains(a) {
			return true
		}
	}
	return false
}
