package awslocal

import (
	"fmt"
	"maps"
	"net/netip"
	"slices"
)

// networkInterface is one ENI as EC2 keeps it. Guarded by Cloud.mu.
type networkInterface struct {
	id             string
	mac            string
	subnetID       string
	description    string
	securityGroups []string
	status         string // "available" | "in-use"
	primaryIP      netip.Addr
	secondaryIPs   []netip.Addr
	ipv4Prefixes   []netip.Prefix
	ipv6Prefixes   []netip.Prefix
	tags           map[string]string
	attachment     *attachment
}

type attachment struct {
	id                  string
	instanceID          string
	deviceIndex         int
	status              string // always "attached": attach and detach complete at once
	deleteOnTermination bool
}

func (n *networkInterface) snapshot() ENI {
	e := ENI{
		ID:             n.id,
		MAC:            n.mac,
		SubnetID:       n.subnetID,
		SecurityGroups: slices.Clone(n.securityGroups),
		Status:         n.status,
		PrimaryIP:      n.primaryIP,
		SecondaryIPs:   slices.Clone(n.secondaryIPs),
		IPv4Prefixes:   slices.Clone(n.ipv4Prefixes),
		IPv6Prefixes:   slices.Clone(n.ipv6Prefixes),
		Tags:           maps.Clone(n.tags),
	}
	if a := n.attachment; a != nil {
		e.AttachmentID = a.id
		e.InstanceID = a.instanceID
		e.DeviceIndex = a.deviceIndex
		e.DeleteOnTermination = a.deleteOnTermination
	}
	return e
}

// ipCount is how many IPv4 address slots the ENI uses, primary included:
// each delegated /28 prefix takes one slot, as in EC2.
func (n *networkInterface) ipCount() int { return 1 + len(n.secondaryIPs) + len(n.ipv4Prefixes) }

// newID returns prefix followed by 17 hex digits, like real EC2 IDs.
// Called with c.mu held (or before the servers start).
func (c *Cloud) newID(prefix string) string {
	c.nextID++
	return fmt.Sprintf("%s0%016x", prefix, 0xa5a5000000000000|c.nextID)
}

// newENI creates an available ENI with its primary address and count
// secondary addresses. Called with c.mu held (or before the servers start).
func (c *Cloud) newENI(subnetID string, groups []string, description string, count int) (*networkInterface, *APIError) {
	if subnetID != c.opts.SubnetID {
		return nil, apiErrorf("InvalidSubnetID.NotFound", "The subnet ID '%s' does not exist", subnetID)
	}
	addrs, apiErr := c.allocate(1 + count)
	if apiErr != nil {
		return nil, apiErr
	}
	c.nextID++
	n := c.nextID
	eni := &networkInterface{
		id:             c.newID("eni-"),
		mac:            fmt.Sprintf("0e:5a:%02x:%02x:%02x:%02x", byte(n>>24), byte(n>>16), byte(n>>8), byte(n)),
		subnetID:       subnetID,
		description:    description,
		securityGroups: slices.Clone(groups),
		status:         "available",
		primaryIP:      addrs[0],
		secondaryIPs:   addrs[1:],
		tags:           map[string]string{},
	}
	c.enis[eni.id] = eni
	return eni, nil
}

// allocate takes the n lowest free addresses of the subnet, skipping the
// four at its start and the one at its end that a VPC reserves.
func (c *Cloud) allocate(n int) ([]netip.Addr, *APIError) {
	prefix := c.opts.SubnetCIDR.Masked()
	out := make([]netip.Addr, 0, n)
	addr := prefix.Addr()
	for range 4 {
		addr = addr.Next()
	}
	for ; len(out) < n && prefix.Contains(addr.Next()); addr = addr.Next() {
		if !c.used[addr] {
			out = append(out, addr)
		}
	}
	if len(out) < n {
		return nil, apiErrorf("InsufficientFreeAddressesInSubnet",
			"The specified subnet does not have enough free addresses to satisfy the request.")
	}
	for _, a := range out {
		c.used[a] = true
	}
	return out, nil
}

// allocatePrefixes takes the n lowest /28 blocks of the subnet none of
// whose addresses is in use (nor among the five a VPC reserves), as EC2
// delegates IPv4 prefixes; a subnet too fragmented for them answers
// InsufficientCidrBlocks even with free addresses left.
func (c *Cloud) allocatePrefixes(n int) ([]netip.Prefix, *APIError) {
	subnet := c.opts.SubnetCIDR.Masked()
	first, last := subnet.Addr(), lastOf(subnet)
	reserved := map[netip.Addr]bool{last: true}
	a := first
	for range 4 {
		reserved[a] = true
		a = a.Next()
	}
	var out []netip.Prefix
	for p := netip.PrefixFrom(first, 28); len(out) < n && subnet.Contains(p.Addr()); {
		free := true
		ip := p.Addr()
		for range 16 {
			if c.used[ip] || reserved[ip] {
				free = false
				break
			}
			ip = ip.Next()
		}
		if free {
			out = append(out, p)
		}
		next := lastOf(p).Next()
		if !next.IsValid() {
			break
		}
		p = netip.PrefixFrom(next, 28)
	}
	if len(out) < n {
		return nil, apiErrorf("InsufficientCidrBlocks", "The specified subnet does not have enough free cidr blocks to satisfy the request.")
	}
	for _, p := range out {
		ip := p.Addr()
		for range 16 {
			c.used[ip] = true
			ip = ip.Next()
		}
	}
	return out, nil
}

func (c *Cloud) releasePrefixes(prefixes ...netip.Prefix) {
	for _, p := range prefixes {
		ip := p.Addr()
		for range 16 {
			delete(c.used, ip)
			ip = ip.Next()
		}
	}
}

// allocateIPv6Prefixes takes the n lowest /80s of the subnet's IPv6 block
// no ENI holds.
func (c *Cloud) allocateIPv6Prefixes(n int) ([]netip.Prefix, *APIError) {
	held := map[netip.Prefix]bool{}
	for _, eni := range c.enis {
		for _, p := range eni.ipv6Prefixes {
			held[p] = true
		}
	}
	base := c.opts.SubnetIPv6CIDR.Masked().Addr().As16()
	var out []netip.Prefix
	for i := 0; len(out) < n && i < 1<<16; i++ {
		b := base
		b[8], b[9] = byte(i>>8), byte(i)
		p := netip.PrefixFrom(netip.AddrFrom16(b), 80)
		if !held[p] {
			out = append(out, p)
		}
	}
	if len(out) < n {
		return nil, apiErrorf("InsufficientCidrBlocks", "The specified subnet does not have enough free cidr blocks to satisfy the request.")
	}
	return out, nil
}

// lastOf is the highest address of p.
func lastOf(p netip.Prefix) netip.Addr {
	b := p.Masked().Addr().AsSlice()
	for bit := p.Bits(); bit < len(b)*8; bit++ {
		b[bit/8] |= 1 << (7 - bit%8)
	}
	ip, _ := netip.AddrFromSlice(b)
	return ip
}

func (c *Cloud) release(addrs ...netip.Addr) {
	for _, a := range addrs {
		delete(c.used, a)
	}
}

func (c *Cloud) lookupENI(id string) (*networkInterface, *APIError) {
	eni, ok := c.enis[id]
	if !ok {
		return nil, apiErrorf("InvalidNetworkInterfaceID.NotFound", "The networkInterface ID '%s' does not exist", id)
	}
	return eni, nil
}

func (c *Cloud) eniByAttachment(attachmentID string) (*networkInterface, *APIError) {
	for _, eni := range c.enis {
		if eni.attachment != nil && eni.attachment.id == attachmentID {
			return eni, nil
		}
	}
	return nil, apiErrorf("InvalidAttachmentID.NotFound", "Interface attachment '%s' does not exist.", attachmentID)
}

// attachedENIs returns the instance's ENIs ordered by device index.
func (c *Cloud) attachedENIs() []*networkInterface {
	var out []*networkInterface
	for _, eni := range c.enis {
		if eni.attachment != nil && eni.attachment.instanceID == c.opts.InstanceID {
			out = append(out, eni)
		}
	}
	slices.SortFunc(out, func(a, b *networkInterface) int { return a.attachment.deviceIndex - b.attachment.deviceIndex })
	return out
}

func (c *Cloud) limits() Limits { return c.opts.InstanceTypes[c.opts.InstanceType] }
