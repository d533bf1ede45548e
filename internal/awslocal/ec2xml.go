package awslocal

import "strconv"

// The types below are EC2's answer shapes, element names as the real
// service writes them (lowerCamelCase, lists as <xSet><item>).

type networkInterfaceXML struct {
	NetworkInterfaceID string             `xml:"networkInterfaceId"`
	SubnetID           string             `xml:"subnetId"`
	VPCID              string             `xml:"vpcId"`
	AvailabilityZone   string             `xml:"availabilityZone"`
	Description        string             `xml:"description"`
	OwnerID            string             `xml:"ownerId"`
	RequesterManaged   bool               `xml:"requesterManaged"`
	Status             string             `xml:"status"`
	MACAddress         string             `xml:"macAddress"`
	PrivateIPAddress   string             `xml:"privateIpAddress"`
	SourceDestCheck    bool               `xml:"sourceDestCheck"`
	InterfaceType      string             `xml:"interfaceType"`
	GroupSet           []groupXML         `xml:"groupSet>item"`
	Attachment         *attachmentXML     `xml:"attachment,omitempty"`
	TagSet             []tagXML           `xml:"tagSet>item"`
	PrivateIPAddresses []privateIPAddrXML `xml:"privateIpAddressesSet>item"`
	IPv4Prefixes       []ipv4PrefixXML    `xml:"ipv4PrefixSet>item"`
	IPv6Prefixes       []ipv6PrefixXML    `xml:"ipv6PrefixSet>item"`
}

type ipv4PrefixXML struct {
	IPv4Prefix string `xml:"ipv4Prefix"`
}

type ipv6PrefixXML struct {
	IPv6Prefix string `xml:"ipv6Prefix"`
}

type groupXML struct {
	GroupID   string `xml:"groupId"`
	GroupName string `xml:"groupName"`
}

type attachmentXML struct {
	AttachmentID        string `xml:"attachmentId"`
	InstanceID          string `xml:"instanceId"`
	InstanceOwnerID     string `xml:"instanceOwnerId"`
	DeviceIndex         int    `xml:"deviceIndex"`
	NetworkCardIndex    int    `xml:"networkCardIndex"`
	Status              string `xml:"status"`
	AttachTime          string `xml:"attachTime"`
	DeleteOnTermination bool   `xml:"deleteOnTermination"`
}

type tagXML struct {
	Key   string `xml:"key"`
	Value string `xml:"value"`
}

type privateIPAddrXML struct {
	PrivateIPAddress string `xml:"privateIpAddress"`
	Primary          bool   `xml:"primary"`
}

type instanceTypeXML struct {
	InstanceType string         `xml:"instanceType"`
	NetworkInfo  networkInfoXML `xml:"networkInfo"`
}

type networkInfoXML struct {
	MaximumNetworkInterfaces  int `xml:"maximumNetworkInterfaces"`
	IPv4AddressesPerInterface int `xml:"ipv4AddressesPerInterface"`
	IPv6AddressesPerInterface int `xml:"ipv6AddressesPerInterface"`
	MaximumNetworkCards       int `xml:"maximumNetworkCards"`
	DefaultNetworkCardIndex   int `xml:"defaultNetworkCardIndex"`
}

// ownerID is the account every resource belongs to.
const ownerID = "111122223333"

func (c *Cloud) eniXML(n *networkInterface) networkInterfaceXML {
	out := networkInterfaceXML{
		NetworkInterfaceID: n.id,
		SubnetID:           n.subnetID,
		VPCID:              c.opts.VPCID,
		AvailabilityZone:   c.opts.Region + "a",
		Description:        n.description,
		OwnerID:            ownerID,
		Status:             n.status,
		MACAddress:         n.mac,
		PrivateIPAddress:   n.primaryIP.String(),
		SourceDestCheck:    true,
		InterfaceType:      "interface",
	}
	for _, g := range n.securityGroups {
		out.GroupSet = append(out.GroupSet, groupXML{GroupID: g, GroupName: "group-" + g})
	}
	for k, v := range n.tags {
		out.TagSet = append(out.TagSet, tagXML{Key: k, Value: v})
	}
	out.PrivateIPAddresses = append(out.PrivateIPAddresses, privateIPAddrXML{PrivateIPAddress: n.primaryIP.String(), Primary: true})
	for _, ip := range n.secondaryIPs {
		out.PrivateIPAddresses = append(out.PrivateIPAddresses, privateIPAddrXML{PrivateIPAddress: ip.String()})
	}
	for _, p := range n.ipv4Prefixes {
		out.IPv4Prefixes = append(out.IPv4Prefixes, ipv4PrefixXML{IPv4Prefix: p.String()})
	}
	for _, p := range n.ipv6Prefixes {
		out.IPv6Prefixes = append(out.IPv6Prefixes, ipv6PrefixXML{IPv6Prefix: p.String()})
	}
	if a := n.attachment; a != nil {
		out.Attachment = &attachmentXML{
			AttachmentID:        a.id,
			InstanceID:          a.instanceID,
			InstanceOwnerID:     ownerID,
			DeviceIndex:         a.deviceIndex,
			Status:              a.status,
			AttachTime:          "2026-01-01T00:00:00.000Z",
			DeleteOnTermination: a.deleteOnTermination,
		}
	}
	return out
}

func instanceTypeToXML(name string, l Limits) instanceTypeXML {
	return instanceTypeXML{InstanceType: name, NetworkInfo: networkInfoXML{
		MaximumNetworkInterfaces:  l.MaxENIs,
		IPv4AddressesPerInterface: l.IPv4PerENI,
		IPv6AddressesPerInterface: l.IPv4PerENI,
		MaximumNetworkCards:       1,
	}}
}

func itoa(n int) string { return strconv.Itoa(n) }
