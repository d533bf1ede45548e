package awslocal_test

import (
	"context"
	"net/netip"
	"testing"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"

	"github.com/sandboxipam/sandboxipam/internal/awslocal"
)

// TestAssignNothingSucceedsEmpty: the next N assignments, by address count
// or by prefix count, answer success with nothing listed and change
// nothing; the one after assigns as usual.
func TestAssignNothingSucceedsEmpty(t *testing.T) {
	cloud := startCloud(t, awslocal.Options{InstanceType: "m5.large"})
	client := cloud.EC2Client()
	ctx := context.Background()
	primary := cloud.ENIs()[0]
	cloud.SetFaults(awslocal.Faults{AssignNothing: 2})
	for _, in := range []*ec2.AssignPrivateIpAddressesInput{
		{NetworkInterfaceId: awssdk.String(primary.ID), SecondaryPrivateIpAddressCount: awssdk.Int32(3)},
		{NetworkInterfaceId: awssdk.String(primary.ID), Ipv4PrefixCount: awssdk.Int32(1)},
	} {
		out, err := client.AssignPrivateIpAddresses(ctx, in)
		if err != nil {
			t.Fatalf("AssignPrivateIpAddresses: %v", err)
		}
		if len(out.AssignedPrivateIpAddresses) != 0 || len(out.AssignedIpv4Prefixes) != 0 {
			t.Fatalf("answer lists %v %v, want nothing", out.AssignedPrivateIpAddresses, out.AssignedIpv4Prefixes)
		}
	}
	if e, _ := cloud.LookupENI(primary.ID); len(e.SecondaryIPs) != 0 || len(e.IPv4Prefixes) != 0 {
		t.Fatalf("ENI holds %v %v after empty assignments, want nothing", e.SecondaryIPs, e.IPv4Prefixes)
	}
	out, err := client.AssignPrivateIpAddresses(ctx, &ec2.AssignPrivateIpAddressesInput{
		NetworkInterfaceId: awssdk.String(primary.ID), SecondaryPrivateIpAddressCount: awssdk.Int32(2)})
	if err != nil || len(out.AssignedPrivateIpAddresses) != 2 {
		t.Fatalf("third assignment: %v, %d addresses; want 2", err, len(out.AssignedPrivateIpAddresses))
	}
}

// TestAssignExtraListsUnassigned: the answer lists the extra addresses,
// the ENI holds only what was assigned, and the call log has both calls
// with their parameters.
func TestAssignExtraListsUnassigned(t *testing.T) {
	cloud := startCloud(t, awslocal.Options{InstanceType: "m5.large"})
	client := cloud.EC2Client()
	ctx := context.Background()
	primary := cloud.ENIs()[0]
	outside := netip.MustParseAddr("10.9.8.7")
	cloud.SetFaults(awslocal.Faults{AssignExtra: func(e awslocal.ENI) []netip.Addr { return []netip.Addr{e.PrimaryIP, outside} }})
	cloud.ResetCalls()
	out, err := client.AssignPrivateIpAddresses(ctx, &ec2.AssignPrivateIpAddressesInput{
		NetworkInterfaceId: awssdk.String(primary.ID), SecondaryPrivateIpAddressCount: awssdk.Int32(1)})
	if err != nil {
		t.Fatalf("AssignPrivateIpAddresses: %v", err)
	}
	e, _ := cloud.LookupENI(primary.ID)
	var listed []string
	for _, a := range out.AssignedPrivateIpAddresses {
		listed = append(listed, awssdk.ToString(a.PrivateIpAddress))
	}
	want := []string{e.SecondaryIPs[0].String(), primary.PrimaryIP.String(), outside.String()}
	if len(e.SecondaryIPs) != 1 || len(listed) != 3 || listed[0] != want[0] || listed[1] != want[1] || listed[2] != want[2] {
		t.Fatalf("answer %v, ENI secondaries %v; want answer %v and one secondary", listed, e.SecondaryIPs, want)
	}
	log := cloud.CallLog()
	if len(log) != 1 || log[0].Action != "AssignPrivateIpAddresses" || log[0].Params.Get("NetworkInterfaceId") != primary.ID ||
		log[0].Params.Get("SecondaryPrivateIpAddressCount") != "1" || log[0].Params.Has("Action") {
		t.Fatalf("call log = %+v", log)
	}
}
