package aws

import (
	"context"
	"testing"
	"time"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/sandboxipam/sandboxipam/internal/awslocal"
	"github.com/sandboxipam/sandboxipam/internal/testsupport"
)

// createDetachedENI makes an ENI through the SDK, tagged with tags by a
// separate CreateTags call, as another tool or an older ipamd might.
func createDetachedENI(t *testing.T, cloud *awslocal.Cloud, tags map[string]string) string {
	t.Helper()
	ctx := context.Background()
	client := cloud.EC2Client()
	out, err := client.CreateNetworkInterface(ctx, &ec2.CreateNetworkInterfaceInput{SubnetId: awssdk.String(cloud.ENIs()[0].SubnetID)})
	if err != nil {
		t.Fatalf("CreateNetworkInterface: %v", err)
	}
	id := awssdk.ToString(out.NetworkInterface.NetworkInterfaceId)
	if len(tags) == 0 {
		return id
	}
	in := &ec2.CreateTagsInput{Resources: []string{id}}
	for k, v := range tags {
		in.Tags = append(in.Tags, types.Tag{Key: awssdk.String(k), Value: awssdk.String(v)})
	}
	if _, err := client.CreateTags(ctx, in); err != nil {
		t.Fatalf("CreateTags: %v", err)
	}
	return id
}

func TestLeakedENIsAreDeleted(t *testing.T) {
	n := newNode(t, awslocal.Options{InstanceType: "t3.medium"})
	ours := map[string]string{TagNode: n.cloud.InstanceID(), TagCreatedBy: "ipamd"}
	leaked := createDetachedENI(t, n.cloud, ours)
	untagged := createDetachedENI(t, n.cloud, nil)
	otherNode := createDetachedENI(t, n.cloud, map[string]string{TagNode: "i-0fedcba9876543210", TagCreatedBy: "ipamd"})
	otherTool := createDetachedENI(t, n.cloud, map[string]string{TagNode: n.cloud.InstanceID(), TagCreatedBy: "someone-else"})

	n.start(n.config(func(c *settings) { c.WarmIPTarget = 1 }))
	if _, ok := n.cloud.LookupENI(leaked); ok {
		t.Fatalf("leaked ENI %s survived the start", leaked)
	}
	for _, id := range []string{untagged, otherNode, otherTool} {
		if _, ok := n.cloud.LookupENI(id); !ok {
			t.Fatalf("ENI %s that is not this node's ipamd's was deleted", id)
		}
	}

	later := createDetachedENI(t, n.cloud, ours)
	deleted, err := n.src.CleanupLeakedENIs(context.Background())
	if err != nil || deleted != 1 {
		t.Fatalf("CleanupLeakedENIs = %d, %v; want 1, nil", deleted, err)
	}
	if _, ok := n.cloud.LookupENI(later); ok {
		t.Fatalf("leaked ENI %s survived the periodic clean-up", later)
	}
	if got := n.src.Status().LeakedDeleted; got != 2 {
		t.Fatalf("Status().LeakedDeleted = %d, want 2", got)
	}
	if got := len(n.cloud.ENIs()); got != 4 {
		t.Fatalf("EC2 has %d ENIs, want the primary and the three that are not ours", got)
	}
}

func TestLeakedENIsAreDeletedByTheLoop(t *testing.T) {
	n := newNode(t, awslocal.Options{InstanceType: "t3.medium"})
	n.start(n.config(func(c *settings) { c.WarmIPTarget = 1; c.LeakedENICleanupInterval = time.Millisecond }))
	leaked := createDetachedENI(t, n.cloud, map[string]string{TagNode: n.cloud.InstanceID(), TagCreatedBy: "ipamd"})
	testsupport.Eventually(t, "the loop to delete the leaked ENI", func() bool { _, ok := n.cloud.LookupENI(leaked); return !ok })
}
