package awslocal_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/netip"
	"strings"
	"testing"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/ec2/imds"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/smithy-go"

	"github.com/sandboxipam/sandboxipam/internal/awslocal"
)

func startCloud(t *testing.T, opts awslocal.Options) *awslocal.Cloud {
	t.Helper()
	cloud, err := awslocal.Start(opts)
	if err != nil {
		t.Fatalf("start awslocal: %v", err)
	}
	t.Cleanup(func() { cloud.Close() })
	return cloud
}

func wantCode(t *testing.T, err error, code string) {
	t.Helper()
	var apiErr smithy.APIError
	if !errors.As(err, &apiErr) || apiErr.ErrorCode() != code {
		t.Fatalf("error = %v, want EC2 code %s", err, code)
	}
}

func createENI(t *testing.T, ctx context.Context, client *ec2.Client, cloud *awslocal.Cloud, count int32) string {
	t.Helper()
	primary := cloud.ENIs()[0]
	out, err := client.CreateNetworkInterface(ctx, &ec2.CreateNetworkInterfaceInput{
		SubnetId: awssdk.String(primary.SubnetID), SecondaryPrivateIpAddressCount: awssdk.Int32(count),
	})
	if err != nil {
		t.Fatalf("CreateNetworkInterface: %v", err)
	}
	return awssdk.ToString(out.NetworkInterface.NetworkInterfaceId)
}

func TestIMDSRequiresToken(t *testing.T) {
	cloud := startCloud(t, awslocal.Options{})
	resp, err := http.Get(cloud.IMDSEndpoint() + "/latest/meta-data/instance-id")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("IMDSv1 GET status = %d, want 401", resp.StatusCode)
	}

	out, err := cloud.IMDSClient().GetMetadata(context.Background(), &imds.GetMetadataInput{Path: "instance-id"})
	if err != nil {
		t.Fatalf("IMDSv2 GetMetadata: %v", err)
	}
	body, _ := io.ReadAll(out.Content)
	if string(body) != "i-0123456789abcdef0" {
		t.Fatalf("instance-id = %q", body)
	}
}

func TestIMDSReflectsAttachedENIs(t *testing.T) {
	ctx := context.Background()
	cloud := startCloud(t, awslocal.Options{})
	client := cloud.EC2Client()
	id := createENI(t, ctx, client, cloud, 2)
	if _, err := client.AttachNetworkInterface(ctx, &ec2.AttachNetworkInterfaceInput{
		NetworkInterfaceId: awssdk.String(id), InstanceId: awssdk.String(cloud.InstanceID()), DeviceIndex: awssdk.Int32(1),
	}); err != nil {
		t.Fatalf("AttachNetworkInterface: %v", err)
	}
	eni, _ := cloud.LookupENI(id)
	get := func(path string) string {
		out, err := cloud.IMDSClient().GetMetadata(ctx, &imds.GetMetadataInput{Path: path})
		if err != nil {
			t.Fatalf("GetMetadata %s: %v", path, err)
		}
		b, _ := io.ReadAll(out.Content)
		return string(b)
	}
	macs := get("network/interfaces/macs/")
	if !strings.Contains(macs, eni.MAC+"/") || strings.Count(macs, "/") != 2 {
		t.Fatalf("macs = %q, want the primary and %s", macs, eni.MAC)
	}
	base := "network/interfaces/macs/" + eni.MAC + "/"
	if got := get(base + "interface-id"); got != id {
		t.Errorf("interface-id = %q, want %q", got, id)
	}
	if got := get(base + "device-number"); got != "1" {
		t.Errorf("device-number = %q, want 1", got)
	}
	want := eni.PrimaryIP.String() + "\n" + eni.SecondaryIPs[0].String() + "\n" + eni.SecondaryIPs[1].String()
	if got := get(base + "local-ipv4s"); got != want {
		t.Errorf("local-ipv4s = %q, want %q", got, want)
	}
	if got := get(base + "subnet-ipv4-cidr-block"); got != "198.18.0.0/20" {
		t.Errorf("subnet-ipv4-cidr-block = %q", got)
	}
}

func TestEC2ErrorCodes(t *testing.T) {
	ctx := context.Background()
	cloud := startCloud(t, awslocal.Options{InstanceType: "t3.medium", SubnetCIDR: netip.MustParsePrefix("198.18.0.0/27")})
	client := cloud.EC2Client()

	_, err := client.AssignPrivateIpAddresses(ctx, &ec2.AssignPrivateIpAddressesInput{
		NetworkInterfaceId: awssdk.String("eni-0000000000000dead"), SecondaryPrivateIpAddressCount: awssdk.Int32(1),
	})
	wantCode(t, err, "InvalidNetworkInterfaceID.NotFound")

	primary := cloud.ENIs()[0]
	_, err = client.AssignPrivateIpAddresses(ctx, &ec2.AssignPrivateIpAddressesInput{
		NetworkInterfaceId: awssdk.String(primary.ID), SecondaryPrivateIpAddressCount: awssdk.Int32(6),
	})
	wantCode(t, err, "PrivateIpAddressLimitExceeded")

	// A /27 has 32 - 5 reserved = 27 usable addresses; the primary holds one.
	for device := int32(1); device <= 2; device++ {
		id := createENI(t, ctx, client, cloud, 5)
		if _, err := client.AttachNetworkInterface(ctx, &ec2.AttachNetworkInterfaceInput{
			NetworkInterfaceId: awssdk.String(id), InstanceId: awssdk.String(cloud.InstanceID()), DeviceIndex: awssdk.Int32(device),
		}); err != nil {
			t.Fatalf("attach at %d: %v", device, err)
		}
	}
	fourth := createENI(t, ctx, client, cloud, 0)
	_, err = client.AttachNetworkInterface(ctx, &ec2.AttachNetworkInterfaceInput{
		NetworkInterfaceId: awssdk.String(fourth), InstanceId: awssdk.String(cloud.InstanceID()), DeviceIndex: awssdk.Int32(3),
	})
	wantCode(t, err, "AttachmentLimitExceeded")

	// 1 + 12 + 1 addresses are taken; 13 remain.
	_, err = client.CreateNetworkInterface(ctx, &ec2.CreateNetworkInterfaceInput{
		SubnetId: awssdk.String(primary.SubnetID), SecondaryPrivateIpAddressCount: awssdk.Int32(13),
	})
	wantCode(t, err, "InsufficientFreeAddressesInSubnet")

	_, err = client.DetachNetworkInterface(ctx, &ec2.DetachNetworkInterfaceInput{AttachmentId: awssdk.String(primary.AttachmentID)})
	wantCode(t, err, "OperationNotPermitted")
}

func TestFaultsAndCounters(t *testing.T) {
	ctx := context.Background()
	cloud := startCloud(t, awslocal.Options{})
	client := cloud.EC2Client()
	cloud.SetFaults(awslocal.Faults{ThrottleEvery: 2, FailActions: map[string]awslocal.APIError{
		"DeleteNetworkInterface": {Code: "UnauthorizedOperation", Message: "You are not authorized to perform this operation.", HTTPStatus: 403},
	}})
	describe := func() error {
		_, err := client.DescribeInstanceTypes(ctx, &ec2.DescribeInstanceTypesInput{InstanceTypes: []types.InstanceType{"t3.medium"}})
		return err
	}
	if err := describe(); err != nil {
		t.Fatalf("first call: %v", err)
	}
	wantCode(t, describe(), "RequestLimitExceeded")
	_, err := client.DeleteNetworkInterface(ctx, &ec2.DeleteNetworkInterfaceInput{NetworkInterfaceId: awssdk.String(cloud.ENIs()[0].ID)})
	wantCode(t, err, "UnauthorizedOperation")

	calls := cloud.Calls()
	if calls["DescribeInstanceTypes"] != 2 || calls["DeleteNetworkInterface"] != 1 || cloud.TotalCalls() != 3 || cloud.Throttled() != 1 {
		t.Fatalf("calls = %v total %d throttled %d, want 2 describe + 1 delete, 1 throttled", calls, cloud.TotalCalls(), cloud.Throttled())
	}
}

func TestDescribeFilters(t *testing.T) {
	ctx := context.Background()
	cloud := startCloud(t, awslocal.Options{})
	client := cloud.EC2Client()
	tagged := createENI(t, ctx, client, cloud, 0)
	createENI(t, ctx, client, cloud, 0)
	if _, err := client.CreateTags(ctx, &ec2.CreateTagsInput{
		Resources: []string{tagged}, Tags: []types.Tag{{Key: awssdk.String("owner"), Value: awssdk.String("me")}},
	}); err != nil {
		t.Fatalf("CreateTags: %v", err)
	}
	out, err := client.DescribeNetworkInterfaces(ctx, &ec2.DescribeNetworkInterfacesInput{Filters: []types.Filter{
		{Name: awssdk.String("tag:owner"), Values: []string{"me"}},
		{Name: awssdk.String("status"), Values: []string{"available"}},
	}})
	if err != nil {
		t.Fatalf("DescribeNetworkInterfaces: %v", err)
	}
	if len(out.NetworkInterfaces) != 1 || awssdk.ToString(out.NetworkInterfaces[0].NetworkInterfaceId) != tagged {
		t.Fatalf("filtered ENIs = %d, want only %s", len(out.NetworkInterfaces), tagged)
	}
	out, err = client.DescribeNetworkInterfaces(ctx, &ec2.DescribeNetworkInterfacesInput{Filters: []types.Filter{
		{Name: awssdk.String("attachment.instance-id"), Values: []string{cloud.InstanceID()}},
	}})
	if err != nil || len(out.NetworkInterfaces) != 1 || awssdk.ToInt32(out.NetworkInterfaces[0].Attachment.DeviceIndex) != 0 {
		t.Fatalf("attached ENIs = %+v, %v; want the primary only", out, err)
	}
	_, err = client.DescribeNetworkInterfaces(ctx, &ec2.DescribeNetworkInterfacesInput{Filters: []types.Filter{
		{Name: awssdk.String("no-such-filter"), Values: []string{"x"}},
	}})
	wantCode(t, err, "InvalidParameterValue")
}
