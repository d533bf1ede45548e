package aws

import (
	"context"
	"errors"
	"net/netip"
	"strings"
	"testing"

	"github.com/sandboxipam/sandboxipam/internal/awslocal"
)

func TestGrowthPastOneENIAttachesSecondENI(t *testing.T) {
	n := newNode(t, awslocal.Options{InstanceType: "t3.medium"})
	n.start(n.config(func(c *settings) { c.WarmIPTarget = 5 }))
	before := n.cloud.Calls()
	n.add(0)
	n.adjust() // the primary ENI is full: the one missing address needs a new ENI

	got := callsSince(n.cloud, before)
	want := map[string]int{"CreateNetworkInterface": 1, "AttachNetworkInterface": 1, "ModifyNetworkInterfaceAttribute": 1}
	if len(got) != len(want) || got["CreateNetworkInterface"] != 1 || got["AttachNetworkInterface"] != 1 || got["ModifyNetworkInterfaceAttribute"] != 1 {
		t.Fatalf("calls = %v, want %v", got, want)
	}
	enis := n.cloud.ENIs()
	primary, second := enis[0], enis[1]
	if second.DeviceIndex != 1 || second.InstanceID != n.cloud.InstanceID() || !second.DeleteOnTermination {
		t.Fatalf("second ENI attached at %d to %q, DeleteOnTermination %v; want 1, this instance, true",
			second.DeviceIndex, second.InstanceID, second.DeleteOnTermination)
	}
	if second.SubnetID != primary.SubnetID || strings.Join(second.SecurityGroups, ",") != strings.Join(primary.SecurityGroups, ",") {
		t.Fatalf("second ENI in %s %v, want the primary's %s %v", second.SubnetID, second.SecurityGroups, primary.SubnetID, primary.SecurityGroups)
	}
	if second.Tags[TagNode] != n.cloud.InstanceID() || second.Tags[TagCreatedBy] != "ipamd" || len(second.Tags) != 2 {
		t.Fatalf("second ENI tags = %v", second.Tags)
	}
	if len(second.SecondaryIPs) != 1 {
		t.Fatalf("second ENI holds %d secondary addresses, want 1", len(second.SecondaryIPs))
	}

	statuses := n.src.ENIs()
	if len(statuses) != 2 || !statuses[0].Primary || statuses[0].IPsTotal != 5 || statuses[0].IPsAssigned != 1 ||
		statuses[1].ID != second.ID || statuses[1].DeviceIndex != 1 || statuses[1].Primary || statuses[1].IPsTotal != 1 ||
		statuses[1].SubnetCIDR.String() != "198.18.0.0/20" || statuses[1].PrimaryIP != second.PrimaryIP {
		t.Fatalf("ENIs() = %+v", statuses)
	}
}

func TestPrimaryAddressesAreNeverPodAddresses(t *testing.T) {
	n := newNode(t, awslocal.Options{InstanceType: "t3.medium"})
	n.start(n.config(func(c *settings) { c.WarmENITarget = 3 }))
	n.wantPool(15, 15, 3)
	ips := map[int]netip.Addr{}
	for i := range 15 {
		ips[i] = n.add(i)
	}
	for _, e := range n.cloud.ENIs() {
		for pod, ip := range ips {
			if ip == e.PrimaryIP {
				t.Fatalf("pod %d got %s, the primary address of %s", pod, ip, e.ID)
			}
		}
	}
}

func TestInstanceLimitStopsGrowth(t *testing.T) {
	n := newNode(t, awslocal.Options{InstanceType: "t3.medium"})
	n.start(n.config(func(c *settings) { c.MinimumIPTarget = 20 }))

	// Run does not fail for this: the node can still use 15 addresses.
	n.wantPool(15, 15, 3)
	st := n.src.Status()
	if st.GrowthBlocked != GrowthBlockedInstanceLimit || st.Capacity != 15 || st.MaxENIs != 3 || st.AddressesPerENI != 5 {
		t.Fatalf("Status = %+v, want growth blocked by the instance limit at 3 x 5", st)
	}
	before := n.cloud.Calls()
	err := n.src.Adjust(context.Background())
	if !errors.Is(err, ErrInstanceLimitReached) {
		t.Fatalf("Adjust = %v, want ErrInstanceLimitReached", err)
	}
	const msg = "t3.medium allows 3 ENIs x 5 pod addresses (15 in all) and the pool needs 5 more"
	if !strings.Contains(err.Error(), msg) {
		t.Fatalf("error %q does not say %q", err, msg)
	}
	if got := callsSince(n.cloud, before); len(got) != 0 {
		t.Fatalf("a blocked pool still calls EC2: %v", got)
	}
}

func TestMaxENIsCapsBelowInstanceLimit(t *testing.T) {
	n := newNode(t, awslocal.Options{InstanceType: "t3.medium"})
	n.start(n.config(func(c *settings) { c.WarmIPTarget = 8; c.MaxENIs = 1 }))
	n.wantPool(5, 5, 1)
	if st := n.src.Status(); st.GrowthBlocked != GrowthBlockedInstanceLimit || st.Capacity != 5 {
		t.Fatalf("Status = %+v, want blocked at one ENI", st)
	}
}

func TestSubnetFullIsReported(t *testing.T) {
	// A /28 has 16 - 5 reserved = 11 usable addresses. The primary ENI's
	// own address takes one and its 9 secondaries nine; a second ENI
	// would need 1 + 3 of the last one.
	n := newNode(t, awslocal.Options{InstanceType: "m5.large", SubnetCIDR: mustPrefix("198.18.0.0/28")})
	n.start(n.config(func(c *settings) { c.WarmIPTarget = 12 }))
	st := n.src.Status()
	if st.GrowthBlocked != GrowthBlockedSubnetFull || st.Total != 9 {
		t.Fatalf("Status = %+v, want 9 addresses and growth blocked by the subnet", st)
	}
	if err := n.src.Adjust(context.Background()); !errors.Is(err, ErrSubnetFull) {
		t.Fatalf("Adjust = %v, want ErrSubnetFull", err)
	}
}
