package aws

import (
	"context"
	"errors"
	"fmt"
	"net/netip"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/smithy-go"
)

// Tags on every ENI this source creates. The node tag scopes leaked-ENI
// clean-up to this instance; the created-by tag keeps it away from ENIs
// other software made.
const (
	TagNode        = "sandboxipam.io/node"
	TagCreatedBy   = "sandboxipam.io/created-by"
	createdByValue = "ipamd"
	eniDescription = "sandboxipam pod addresses"
)

// EC2 error codes the source branches on.
const (
	codeAttachmentLimit = "AttachmentLimitExceeded"
	codeAddressLimit    = "PrivateIpAddressLimitExceeded"
	codeSubnetFull      = "InsufficientFreeAddressesInSubnet"
	// codeNoCidrBlocks: the subnet has no free /28 (or /80) for a
	// prefix, even with free addresses left (they are scattered).
	codeNoCidrBlocks = "InsufficientCidrBlocks"
	codeENINotFound  = "InvalidNetworkInterfaceID.NotFound"
	codeENIInUse     = "InvalidNetworkInterface.InUse"
)

// ec2API is the handful of EC2 calls the source makes, with the answers
// reduced to what it needs.
type ec2API struct {
	client     *ec2.Client
	instanceID string
}

// limits are the instance type's network limits.
type limits struct {
	maxENIs    int
	ipv4PerENI int // primary address included
}

func (a ec2API) instanceTypeLimits(ctx context.Context, instanceType string) (limits, error) {
	out, err := a.client.DescribeInstanceTypes(ctx, &ec2.DescribeInstanceTypesInput{
		InstanceTypes: []types.InstanceType{types.InstanceType(instanceType)},
	})
	if err != nil {
		return limits{}, fmt.Errorf("describe instance type %s: %w", instanceType, err)
	}
	if len(out.InstanceTypes) != 1 || out.InstanceTypes[0].NetworkInfo == nil {
		return limits{}, fmt.Errorf("describe instance type %s: no network info in the answer", instanceType)
	}
	info := out.InstanceTypes[0].NetworkInfo
	l := limits{maxENIs: int(awssdk.ToInt32(info.MaximumNetworkInterfaces)), ipv4PerENI: int(awssdk.ToInt32(info.Ipv4AddressesPerInterface))}
	if l.maxENIs < 1 || l.ipv4PerENI < 1 {
		return limits{}, fmt.Errorf("describe instance type %s: implausible limits %d ENIs x %d addresses", instanceType, l.maxENIs, l.ipv4PerENI)
	}
	return l, nil
}

// describeENIs lists the network interfaces matching filters, every page.
func (a ec2API) describeENIs(ctx context.Context, filters map[string]string) ([]types.NetworkInterface, error) {
	in := &ec2.DescribeNetworkInterfacesInput{}
	for name, value := range filters {
		in.Filters = append(in.Filters, types.Filter{Name: awssdk.String(name), Values: []string{value}})
	}
	var out []types.NetworkInterface
	pages := ec2.NewDescribeNetworkInterfacesPaginator(a.client, in)
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("describe network interfaces %v: %w", filters, err)
		}
		out = append(out, page.NetworkInterfaces...)
	}
	return out, nil
}

// attachedENIs lists every ENI attached to the instance, ours or not.
func (a ec2API) attachedENIs(ctx context.Context) ([]types.NetworkInterface, error) {
	return a.describeENIs(ctx, map[string]string{"attachment.instance-id": a.instanceID})
}

// describeENI reads one ENI back, as EC2 holds it now.
func (a ec2API) describeENI(ctx context.Context, eniID string) (types.NetworkInterface, error) {
	found, err := a.describeENIs(ctx, map[string]string{"network-interface-id": eniID})
	if err != nil {
		return types.NetworkInterface{}, err
	}
	if len(found) != 1 {
		return types.NetworkInterface{}, fmt.Errorf("describe network interface %s: %d interfaces in the answer, want 1", eniID, len(found))
	}
	return found[0], nil
}

// leakedENIs lists the detached ENIs this node's ipamd created.
func (a ec2API) leakedENIs(ctx context.Context) ([]types.NetworkInterface, error) {
	return a.describeENIs(ctx, map[string]string{
		"tag:" + TagNode:      a.instanceID,
		"tag:" + TagCreatedBy: createdByValue,
		"status":              string(types.NetworkInterfaceStatusAvailable),
	})
}

// createENI creates an ENI with count secondary addresses, or with count
// IPv4 /28 prefixes when prefixes is set. The tags are
// part of the create call rather than a later CreateTags, so an ENI is
// never without them: a crash between two calls would otherwise leave an
// ENI that leaked-ENI clean-up cannot recognise.
func (a ec2API) createENI(ctx context.Context, subnetID string, groups []string, count int, prefixes bool) (types.NetworkInterface, error) {
	in := &ec2.CreateNetworkInterfaceInput{
		SubnetId:    awssdk.String(subnetID),
		Groups:      groups,
		Description: awssdk.String(eniDescription),
		TagSpecifications: []types.TagSpecification{{
			ResourceType: types.ResourceTypeNetworkInterface,
			Tags: []types.Tag{
				{Key: awssdk.String(TagNode), Value: awssdk.String(a.instanceID)},
				{Key: awssdk.String(TagCreatedBy), Value: awssdk.String(createdByValue)},
			},
		}},
	}
	if prefixes {
		in.Ipv4PrefixCount = awssdk.Int32(int32(count))
	} else {
		in.SecondaryPrivateIpAddressCount = awssdk.Int32(int32(count))
	}
	out, err := a.client.CreateNetworkInterface(ctx, in)
	if err != nil {
		return types.NetworkInterface{}, fmt.Errorf("create network interface in %s: %w", subnetID, err)
	}
	if out.NetworkInterface == nil || out.NetworkInterface.NetworkInterfaceId == nil {
		return types.NetworkInterface{}, fmt.Errorf("create network interface in %s: no interface in the answer", subnetID)
	}
	return *out.NetworkInterface, nil
}

func (a ec2API) attachENI(ctx context.Context, eniID string, deviceIndex int) (string, error) {
	out, err := a.client.AttachNetworkInterface(ctx, &ec2.AttachNetworkInterfaceInput{
		NetworkInterfaceId: awssdk.String(eniID),
		InstanceId:         awssdk.String(a.instanceID),
		DeviceIndex:        awssdk.Int32(int32(deviceIndex)),
	})
	if err != nil {
		return "", fmt.Errorf("attach %s at device index %d: %w", eniID, deviceIndex, err)
	}
	return awssdk.ToString(out.AttachmentId), nil
}

// setDeleteOnTermination makes the ENI go away with the instance.
func (a ec2API) setDeleteOnTermination(ctx context.Context, eniID, attachmentID string) error {
	_, err := a.client.ModifyNetworkInterfaceAttribute(ctx, &ec2.ModifyNetworkInterfaceAttributeInput{
		NetworkInterfaceId: awssdk.String(eniID),
		Attachment: &types.NetworkInterfaceAttachmentChanges{
			AttachmentId:        awssdk.String(attachmentID),
			DeleteOnTermination: awssdk.Bool(true),
		},
	})
	if err != nil {
		return fmt.Errorf("set DeleteOnTermination on %s: %w", eniID, err)
	}
	return nil
}

func (a ec2API) assignIPs(ctx context.Context, eniID string, count int) ([]netip.Addr, error) {
	out, err := a.client.AssignPrivateIpAddresses(ctx, &ec2.AssignPrivateIpAddressesInput{
		NetworkInterfaceId:             awssdk.String(eniID),
		SecondaryPrivateIpAddressCount: awssdk.Int32(int32(count)),
	})
	if err != nil {
		return nil, fmt.Errorf("assign %d private addresses to %s: %w", count, eniID, err)
	}
	ips := make([]netip.Addr, 0, len(out.AssignedPrivateIpAddresses))
	for _, assigned := range out.AssignedPrivateIpAddresses {
		ip, err := netip.ParseAddr(awssdk.ToString(assigned.PrivateIpAddress))
		if err != nil {
			return nil, fmt.Errorf("assign private addresses to %s: bad address in the answer: %w", eniID, err)
		}
		ips = append(ips, ip)
	}
	return ips, nil
}

func (a ec2API) unassignIPs(ctx context.Context, eniID string, ips []netip.Addr) error {
	strs := make([]string, len(ips))
	for i, ip := range ips {
		strs[i] = ip.String()
	}
	_, err := a.client.UnassignPrivateIpAddresses(ctx, &ec2.UnassignPrivateIpAddressesInput{
		NetworkInterfaceId: awssdk.String(eniID),
		PrivateIpAddresses: strs,
	})
	if err != nil {
		return fmt.Errorf("unassign %d private addresses from %s: %w", len(ips), eniID, err)
	}
	return nil
}

// assignPrefixes delegates count IPv4 /28 prefixes to the ENI.
func (a ec2API) assignPrefixes(ctx context.Context, eniID string, count int) ([]netip.Prefix, error) {
	out, err := a.client.AssignPrivateIpAddresses(ctx, &ec2.AssignPrivateIpAddressesInput{
		NetworkInterfaceId: awssdk.String(eniID),
		Ipv4PrefixCount:    awssdk.Int32(int32(count)),
	})
	if err != nil {
		return nil, fmt.Errorf("assign %d IPv4 prefixes to %s: %w", count, eniID, err)
	}
	prefixes := make([]netip.Prefix, 0, len(out.AssignedIpv4Prefixes))
	for _, p := range out.AssignedIpv4Prefixes {
		prefix, err := netip.ParsePrefix(awssdk.ToString(p.Ipv4Prefix))
		if err != nil {
			return nil, fmt.Errorf("assign IPv4 prefixes to %s: bad prefix in the answer: %w", eniID, err)
		}
		prefixes = append(prefixes, prefix)
	}
	return prefixes, nil
}

func (a ec2API) unassignPrefixes(ctx context.Context, eniID string, prefixes []netip.Prefix) error {
	strs := make([]string, len(prefixes))
	for i, p := range prefixes {
		strs[i] = p.String()
	}
	_, err := a.client.UnassignPrivateIpAddresses(ctx, &ec2.UnassignPrivateIpAddressesInput{
		NetworkInterfaceId: awssdk.String(eniID),
		Ipv4Prefixes:       strs,
	})
	if err != nil {
		return fmt.Errorf("unassign IPv4 prefixes %v from %s: %w", strs, eniID, err)
	}
	return nil
}

// assignIPv6Prefix delegates one IPv6 /80 prefix to the ENI.
func (a ec2API) assignIPv6Prefix(ctx context.Context, eniID string) ([]netip.Prefix, error) {
	out, err := a.client.AssignIpv6Addresses(ctx, &ec2.AssignIpv6AddressesInput{
		NetworkInterfaceId: awssdk.String(eniID),
		Ipv6PrefixCount:    awssdk.Int32(1),
	})
	if err != nil {
		return nil, fmt.Errorf("assign an IPv6 prefix to %s: %w", eniID, err)
	}
	var prefixes []netip.Prefix
	for _, s := range out.AssignedIpv6Prefixes {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return nil, fmt.Errorf("assign an IPv6 prefix to %s: bad prefix in the answer: %w", eniID, err)
		}
		prefixes = append(prefixes, p)
	}
	return prefixes, nil
}

func (a ec2API) detachENI(ctx context.Context, eniID, attachmentID string) error {
	_, err := a.client.DetachNetworkInterface(ctx, &ec2.DetachNetworkInterfaceInput{AttachmentId: awssdk.String(attachmentID)})
	if err != nil {
		return fmt.Errorf("detach %s (attachment %s): %w", eniID, attachmentID, err)
	}
	return nil
}

func (a ec2API) deleteENI(ctx context.Context, eniID string) error {
	_, err := a.client.DeleteNetworkInterface(ctx, &ec2.DeleteNetworkInterfaceInput{NetworkInterfaceId: awssdk.String(eniID)})
	if err != nil {
		return fmt.Errorf("delete %s: %w", eniID, err)
	}
	return nil
}

// errorCode is the EC2 error code inside err, or "" when err is not an
// answer from EC2 (a timeout, a refused connection): then the call's
// outcome is unknown.
func errorCode(err error) string {
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) {
		return apiErr.ErrorCode()
	}
	return ""
}
