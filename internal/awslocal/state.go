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

// ipCount is how many private IPv4 addresses the ENI holds, primary included.
func (n *networkInterface) ipCount() int { return 1 + len(n.secondaryIPs) }

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
