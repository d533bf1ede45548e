package aws

import (
	"context"
	"testing"

	"github.com/sandboxipam/sandboxipam/internal/awslocal"
	"github.com/sandboxipam/sandboxipam/internal/testsupport"
)

func TestShrinkNeverTouchesAddressesPodsHold(t *testing.T) {
	n := newNode(t, awslocal.Options{InstanceType: "t3.medium"})
	n.start(n.config(func(c *settings) { c.WarmIPTarget = 1 }))
	ips := n.addAll(0, 14) // 15 addresses on 3 ENIs, 14 held
	n.wantPool(15, 1, 3)

	// Pods on every ENI go away; one pod per ENI stays.
	kept := map[int]bool{0: true, 7: true, 13: true}
	for i := range 14 {
		if !kept[i] {
			n.del(i)
		}
	}
	n.clock.Advance(2 * testCooldown)
	before := n.cloud.Calls()
	n.adjust()
	if callsSince(n.cloud, before)["UnassignPrivateIpAddresses"] == 0 {
		t.Fatal("nothing was unassigned; the test proves nothing")
	}
	n.wantPool(4, 1, 3) // no ENI is empty of pods, so all three stay
	for pod := range kept {
		if !n.cloudHolds(ips[pod]) {
			t.Fatalf("pod %d's address %s was unassigned in EC2", pod, ips[pod])
		}
	}
	if st := n.src.Status(); st.Assigned != 3 {
		t.Fatalf("assigned = %d, want 3", st.Assigned)
	}
}

func TestCoolingAddressesAreNotReturned(t *testing.T) {
	n := newNode(t, awslocal.Options{InstanceType: "t3.medium"})
	n.start(n.config(func(c *settings) { c.WarmIPTarget = 1 }))
	n.addAll(0, 4)
	n.wantPool(5, 1, 1)
	for i := range 4 {
		n.del(i)
	}
	n.adjust() // the four wait out their cooldown: nothing to give back
	n.wantPool(5, 1, 1)
	n.wantCloudSecondaries(5)
	n.clock.Advance(2 * testCooldown)
	n.adjust()
	n.wantPool(1, 1, 1)
	n.wantCloudSecondaries(1)
}

func TestRefusedUnassignGivesAddressesBack(t *testing.T) {
	n := newNode(t, awslocal.Options{InstanceType: "t3.medium"})
	n.start(n.config(func(c *settings) { c.WarmIPTarget = 1 }))
	n.addAll(0, 4)
	for i := range 4 {
		n.del(i)
	}
	n.clock.Advance(2 * testCooldown)
	n.cloud.SetFaults(awslocal.Faults{FailActions: map[string]awslocal.APIError{
		"UnassignPrivateIpAddresses": {Code: "UnauthorizedOperation", Message: "You are not authorized to perform this operation.", HTTPStatus: 403},
	}})
	if err := n.src.Adjust(context.Background()); err == nil || errorCode(err) != "UnauthorizedOperation" {
		t.Fatalf("Adjust = %v, want the refusal", err)
	}
	n.wantPool(5, 5, 1) // all five are back and free
	n.wantCloudSecondaries(5)
	for i := range 5 {
		n.add(10 + i)
	}

	n.cloud.SetFaults(awslocal.Faults{})
	for i := range 5 {
		n.del(10 + i)
	}
	n.clock.Advance(2 * testCooldown)
	n.adjust()
	n.wantPool(1, 1, 1)
	n.wantCloudSecondaries(1)
}

func TestUnknownUnassignOutcomeIsResolvedFromEC2(t *testing.T) {
	n := newNode(t, awslocal.Options{InstanceType: "t3.medium"})
	n.start(n.config(func(c *settings) { c.WarmIPTarget = 1 }))
	n.addAll(0, 4)
	for i := range 4 {
		n.del(i)
	}
	n.clock.Advance(2 * testCooldown)

	// The unassign call times out unanswered: EC2 did nothing, but the
	// source cannot know that.
	hold := make(chan struct{})
	n.cloud.SetFaults(awslocal.Faults{Hold: hold})
	ctx, cancel := context.WithCancel(context.Background())
	adjusted := make(chan error, 1)
	go func() { adjusted <- n.src.Adjust(ctx) }()
	testsupport.Eventually(t, "the unassign call to be in flight", func() bool { return n.cloud.InFlight() > 0 })
	cancel()
	if err := <-adjusted; err == nil {
		t.Fatal("Adjust with a cancelled call returned nil")
	}
	close(hold)
	n.cloud.SetFaults(awslocal.Faults{})

	n.adjust() // re-reads EC2, finds all five, then shrinks for real
	n.wantPool(1, 1, 1)
	n.wantCloudSecondaries(1)
	ip := n.add(20)
	if !n.cloudHolds(ip) {
		t.Fatalf("pod got %s, which EC2 does not hold", ip)
	}
}
