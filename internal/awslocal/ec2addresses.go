package awslocal

import (
	"net/netip"
	"net/url"
	"slices"
)

// assignedIPs is AssignPrivateIpAddresses' answer.
type assignedIPs struct {
	requestID
	NetworkInterfaceID string          `xml:"networkInterfaceId"`
	Assigned           []assignedIP    `xml:"assignedPrivateIpAddressesSet>item"`
	AssignedPrefixes   []ipv4PrefixXML `xml:"assignedIpv4PrefixSet>item"`
}

type assignedIP struct {
	PrivateIPAddress string `xml:"privateIpAddress"`
}

// addressCounts reads SecondaryPrivateIpAddressCount and Ipv4PrefixCount,
// of which EC2 takes one at most.
func addressCounts(form url.Values) (count, prefixCount int, apiErr *APIError) {
	if count, apiErr = intParam(form, "SecondaryPrivateIpAddressCount"); apiErr != nil {
		return 0, 0, apiErr
	}
	if prefixCount, apiErr = intParam(form, "Ipv4PrefixCount"); apiErr != nil {
		return 0, 0, apiErr
	}
	if count > 0 && prefixCount > 0 {
		return 0, 0, apiErrorf("InvalidParameterCombination", "You cannot specify both secondary private IP addresses and IPv4 prefixes.")
	}
	return count, prefixCount, nil
}

func (c *Cloud) assignPrivateIPAddresses(form url.Values) (response, *APIError) {
	eni, apiErr := c.lookupENI(form.Get("NetworkInterfaceId"))
	if apiErr != nil {
		return nil, apiErr
	}
	count, prefixCount, apiErr := addressCounts(form)
	if apiErr != nil {
		return nil, apiErr
	}
	switch {
	case len(listParam(form, "PrivateIpAddress")) > 0 || len(listParam(form, "Ipv4Prefix")) > 0:
		return nil, apiErrorf("InvalidParameterCombination", "awslocal assigns by SecondaryPrivateIpAddressCount or Ipv4PrefixCount only")
	case count == 0 && prefixCount == 0:
		return nil, apiErrorf("MissingParameter", "Either 'privateIpAddress' or 'secondaryPrivateIpAddressCount' must be specified.")
	case eni.attachment != nil && eni.ipCount()+count+prefixCount > c.limits().IPv4PerENI:
		// A prefix takes one slot, as an address does.
		return nil, apiErrorf("PrivateIpAddressLimitExceeded", "Number of private addresses will exceed limit.")
	}
	out := &assignedIPs{NetworkInterfaceID: eni.id}
	if c.faults.AssignNothing > 0 {
		c.faults.AssignNothing--
		return out, nil
	}
	if prefixCount > 0 {
		prefixes, apiErr := c.allocatePrefixes(prefixCount)
		if apiErr != nil {
			return nil, apiErr
		}
		eni.ipv4Prefixes = append(eni.ipv4Prefixes, prefixes...)
		for _, p := range prefixes {
			out.AssignedPrefixes = append(out.AssignedPrefixes, ipv4PrefixXML{IPv4Prefix: p.String()})
		}
		return out, nil
	}
	addrs, apiErr := c.allocate(count)
	if apiErr != nil {
		return nil, apiErr
	}
	eni.secondaryIPs = append(eni.secondaryIPs, addrs...)
	if extra := c.faults.AssignExtra; extra != nil {
		addrs = append(addrs, extra(eni.snapshot())...)
	}
	for _, a := range addrs {
		out.Assigned = append(out.Assigned, assignedIP{PrivateIPAddress: a.String()})
	}
	return out, nil
}

func (c *Cloud) unassignPrivateIPAddresses(form url.Values) (response, *APIError) {
	eni, apiErr := c.lookupENI(form.Get("NetworkInterfaceId"))
	if apiErr != nil {
		return nil, apiErr
	}
	var dropPrefixes []netip.Prefix
	for _, s := range listParam(form, "Ipv4Prefix") {
		p, err := netip.ParsePrefix(s)
		if err != nil || !slices.Contains(eni.ipv4Prefixes, p) {
			return nil, apiErrorf("InvalidParameterValue", "Some of the specified prefixes are not assigned to interface %s", eni.id)
		}
		dropPrefixes = append(dropPrefixes, p)
	}
	if len(dropPrefixes) > 0 {
		eni.ipv4Prefixes = slices.DeleteFunc(eni.ipv4Prefixes, func(p netip.Prefix) bool { return slices.Contains(dropPrefixes, p) })
		c.releasePrefixes(dropPrefixes...)
		return &returnTrue{Return: true}, nil
	}
	var drop []netip.Addr
	for _, s := range listParam(form, "PrivateIpAddress") {
		a, err := netip.ParseAddr(s)
		if err != nil || !slices.Contains(eni.secondaryIPs, a) {
			return nil, apiErrorf("InvalidParameterValue", "Some of the specified addresses are not assigned to interface %s", eni.id)
		}
		drop = append(drop, a)
	}
	if len(drop) == 0 {
		return nil, apiErrorf("MissingParameter", "The request must contain the parameter privateIpAddress")
	}
	eni.secondaryIPs = slices.DeleteFunc(eni.secondaryIPs, func(a netip.Addr) bool { return slices.Contains(drop, a) })
	c.release(drop...)
	return &returnTrue{Return: true}, nil
}

// assignIPv6Addresses delegates Ipv6PrefixCount /80 prefixes of the
// subnet's IPv6 block to the ENI (awslocal models prefixes only).
func (c *Cloud) assignIPv6Addresses(form url.Values) (response, *APIError) {
	type answer struct {
		requestID
		NetworkInterfaceID string   `xml:"networkInterfaceId"`
		AssignedPrefixes   []string `xml:"assignedIpv6PrefixSet>item"` // plain strings, as EC2 answers
	}
	eni, apiErr := c.lookupENI(form.Get("NetworkInterfaceId"))
	if apiErr != nil {
		return nil, apiErr
	}
	n, apiErr := intParam(form, "Ipv6PrefixCount")
	if apiErr != nil {
		return nil, apiErr
	}
	if n == 0 {
		return nil, apiErrorf("InvalidParameterCombination", "awslocal assigns IPv6 by Ipv6PrefixCount only")
	}
	prefixes, apiErr := c.allocateIPv6Prefixes(n)
	if apiErr != nil {
		return nil, apiErr
	}
	eni.ipv6Prefixes = append(eni.ipv6Prefixes, prefixes...)
	out := &answer{NetworkInterfaceID: eni.id}
	for _, p := range prefixes {
		out.AssignedPrefixes = append(out.AssignedPrefixes, p.String())
	}
	return out, nil
}
