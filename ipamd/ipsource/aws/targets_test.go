package aws

import (
	"testing"

	"github.com/sandboxipam/sandboxipam/internal/awslocal"
)

// t3.medium: 3 ENIs x 6 IPv4 addresses, so 5 pod addresses per ENI and
// 15 in all.

func TestWarmIPTargetReachedAndHeld(t *testing.T) {
	n := newNode(t, awslocal.Options{InstanceType: "t3.medium"})
	n.start(n.config(func(c *settings) { c.WarmIPTarget = 3 }))
	n.wantPool(3, 3, 1)
	n.wantCloudSecondaries(3)

	n.addAll(0, 2) // each ADD is followed by one more address on the primary ENI
	n.wantPool(5, 3, 1)
	n.addAll(2, 4) // primary full -> a second ENI, grown one address at a time
	n.wantPool(7, 3, 2)
	n.wantCloudSecondaries(5, 2)

	before := n.cloud.Calls()
	n.adjust()
	if got := callsSince(n.cloud, before); len(got) != 0 {
		t.Fatalf("a pool at its target made EC2 calls: %v", got)
	}

	for i := range 4 {
		n.del(i)
	}
	n.clock.Advance(2 * testCooldown)
	n.adjust() // 7 free: the second ENI goes whole, then 2 leave the primary
	n.wantPool(3, 3, 1)
	n.wantCloudSecondaries(3)
	if got := len(n.cloud.ENIs()); got != 1 {
		t.Fatalf("EC2 has %d ENIs after the shrink, want the primary only", got)
	}
}

func TestMinimumIPTargetReachedAndHeld(t *testing.T) {
	n := newNode(t, awslocal.Options{InstanceType: "t3.medium"})
	n.start(n.config(func(c *settings) { c.MinimumIPTarget = 8; c.WarmIPTarget = 2 }))
	n.wantPool(8, 8, 2)
	n.wantCloudSecondaries(5, 3)

	n.addAll(0, 6) // free 2: both targets met, nothing changes
	n.wantPool(8, 2, 2)
	n.addAll(6, 7) // free 1 -> one more
	n.wantPool(9, 2, 2)
	n.wantCloudSecondaries(5, 4)

	for i := range 7 {
		n.del(i)
	}
	n.clock.Advance(2 * testCooldown)
	n.adjust() // 9 free, but the minimum keeps 8
	n.wantPool(8, 8, 2)
	n.wantCloudSecondaries(5, 3)
}

func TestOnlyMinimumIPTarget(t *testing.T) {
	n := newNode(t, awslocal.Options{InstanceType: "t3.medium"})
	n.start(n.config(func(c *settings) { c.MinimumIPTarget = 4; c.WarmENITarget = 3 }))
	n.wantPool(4, 4, 1) // WarmENITarget is ignored once an IP target is set
	n.addAll(0, 4)
	n.wantPool(4, 0, 1) // no warm target: a full pool at the minimum is enough
}

func TestWarmENITargetReachedAndHeld(t *testing.T) {
	n := newNode(t, awslocal.Options{InstanceType: "t3.medium"})
	n.start(n.config(func(c *settings) { c.WarmENITarget = 1 }))
	n.wantPool(5, 5, 1) // one whole ENI's worth free
	n.addAll(0, 1)      // 4 free < 5 -> a whole new ENI
	n.wantPool(10, 9, 2)
	n.wantCloudSecondaries(5, 5)
	n.addAll(1, 5) // 5 free: held
	n.wantPool(10, 5, 2)
	n.addAll(5, 6)
	n.wantPool(15, 9, 3)
	n.wantCloudSecondaries(5, 5, 5)

	before := n.cloud.Calls()
	for i := range 6 {
		n.del(i)
	}
	n.clock.Advance(2 * testCooldown)
	n.adjust() // 15 free: two whole ENIs go, never single addresses
	n.wantPool(5, 5, 1)
	n.wantCloudSecondaries(5)
	got := callsSince(n.cloud, before)
	if got["DetachNetworkInterface"] != 2 || got["DeleteNetworkInterface"] != 2 || got["UnassignPrivateIpAddresses"] != 0 {
		t.Fatalf("shrink calls = %v, want 2 detach + 2 delete and no unassign", got)
	}
}
