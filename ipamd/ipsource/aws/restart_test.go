package aws

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/sandboxipam/sandboxipam/internal/awslocal"
	"github.com/sandboxipam/sandboxipam/internal/testsupport"
	"github.com/sandboxipam/sandboxipam/ipamd/datastore"
)

func TestRestartAdoptsExistingENIs(t *testing.T) {
	n := newNode(t, awslocal.Options{InstanceType: "t3.medium"})
	cfg := n.config(func(c *settings) { c.WarmIPTarget = 3 })
	n.start(cfg)
	first := n.addAll(0, 8)
	n.wantPool(11, 3, 3)
	enisBefore := n.src.ENIs()

	n.shutdown() // ipamd exits; EC2 and the checkpoint stay
	n.cloud.ResetCalls()
	n.start(cfg)

	got := n.cloud.Calls()
	for _, action := range []string{"CreateNetworkInterface", "AttachNetworkInterface", "AssignPrivateIpAddresses", "UnassignPrivateIpAddresses", "DeleteNetworkInterface"} {
		if got[action] != 0 {
			t.Fatalf("second start called %s %d times; calls %v", action, got[action], got)
		}
	}
	if got["DescribeNetworkInterfaces"] == 0 {
		t.Fatalf("second start did not read the ENIs from EC2: calls %v", got)
	}
	n.wantPool(11, 3, 3)
	if st := n.src.Status(); st.Assigned != 8 {
		t.Fatalf("assigned after restart = %d, want the 8 pods of the checkpoint", st.Assigned)
	}
	if after := n.src.ENIs(); len(after) != 3 || fmt.Sprint(after) != fmt.Sprint(enisBefore) {
		t.Fatalf("ENIs after restart = %+v, want %+v", after, enisBefore)
	}

	seen := map[netip.Addr]int{}
	for pod, ip := range first {
		seen[ip] = pod
	}
	for i := 8; i < 11; i++ {
		ip := n.add(i)
		if pod, dup := seen[ip]; dup {
			t.Fatalf("pod %d got %s, which pod %d still holds", i, ip, pod)
		}
		if !n.cloudHolds(ip) {
			t.Fatalf("pod %d got %s, which no attached ENI holds in EC2", i, ip)
		}
		seen[ip] = i
	}
	// The pool holds exactly what EC2 holds: nothing is left over.
	if _, err := n.store.Assign(context.Background(), podKey(11), datastore.Pod{Name: "pod-11"}); !errors.Is(err, datastore.ErrPoolExhausted) {
		t.Fatalf("ADD of a 12th pod = %v, want ErrPoolExhausted before the pool grows", err)
	}
}

func TestRestartDropsENIsDetachedMeanwhile(t *testing.T) {
	n := newNode(t, awslocal.Options{InstanceType: "t3.medium"})
	cfg := n.config(func(c *settings) { c.WarmIPTarget = 7 })
	n.start(cfg)
	n.wantPool(7, 7, 2)
	n.shutdown()

	// While ipamd is down, someone detaches and deletes the second ENI.
	client := n.cloud.EC2Client()
	second := n.cloud.ENIs()[1]
	ctx := context.Background()
	if _, err := client.DetachNetworkInterface(ctx, detachInput(second.AttachmentID)); err != nil {
		t.Fatal(err)
	}
	if _, err := client.DeleteNetworkInterface(ctx, deleteInput(second.ID)); err != nil {
		t.Fatal(err)
	}
	n.start(cfg) // adopts the primary's 5, then grows a new second ENI
	n.wantPool(7, 7, 2)
	for _, e := range n.src.ENIs() {
		if e.ID == second.ID {
			t.Fatalf("the deleted ENI %s is still managed", second.ID)
		}
	}
}

func TestThrottlingSlowsButNeverBreaksAdd(t *testing.T) {
	n := newNode(t, awslocal.Options{InstanceType: "t3.medium"})
	n.cloud.SetFaults(awslocal.Faults{ThrottleEvery: 3})
	n.start(n.config(func(c *settings) { c.WarmIPTarget = 2; c.PoolCheckInterval = time.Millisecond }))

	held := map[netip.Addr]int{}
	for i := range 12 {
		testsupport.Eventually(t, "a free address", func() bool { _, free := n.pool(); return free > 0 })
		ip := n.add(i) // fails the test if ADD fails
		if pod, dup := held[ip]; dup {
			t.Fatalf("pod %d got %s, which pod %d holds", i, ip, pod)
		}
		held[ip] = i
	}
	testsupport.Eventually(t, "the warm target after the last ADD", func() bool { total, free := n.pool(); return total == 14 && free == 2 })
	if n.cloud.Throttled() == 0 {
		t.Fatal("no call was throttled; the test proves nothing")
	}
	for ip, pod := range held {
		if !n.cloudHolds(ip) {
			t.Fatalf("pod %d holds %s, which no ENI holds in EC2", pod, ip)
		}
	}
	n.wantCloudSecondaries(5, 5, 4)
}

func TestAddNeverWaitsForEC2(t *testing.T) {
	n := newNode(t, awslocal.Options{InstanceType: "t3.medium"})
	n.start(n.config(func(c *settings) { c.WarmIPTarget = 2 }))
	hold := make(chan struct{})
	n.cloud.SetFaults(awslocal.Faults{Hold: hold})

	n.add(0) // one free address left
	adjusted := make(chan error, 1)
	go func() { adjusted <- n.src.Adjust(context.Background()) }()
	testsupport.Eventually(t, "the source's EC2 call to be in flight", func() bool { return n.cloud.InFlight() > 0 })

	n.add(1) // the last free address, while EC2 does not answer
	if _, err := n.store.Assign(context.Background(), podKey(2), datastore.Pod{Name: "pod-2"}); !errors.Is(err, datastore.ErrPoolExhausted) {
		t.Fatalf("ADD with an empty pool = %v, want ErrPoolExhausted at once rather than a wait on EC2", err)
	}
	close(hold)
	if err := <-adjusted; err != nil {
		t.Fatalf("Adjust: %v", err)
	}
	n.add(2)
}

func TestRunReturnsFirstFillError(t *testing.T) {
	n := newNode(t, awslocal.Options{InstanceType: "t3.medium"})
	n.cloud.SetFaults(awslocal.Faults{FailActions: map[string]awslocal.APIError{
		"AssignPrivateIpAddresses": {Code: "UnauthorizedOperation", Message: "You are not authorized to perform this operation.", HTTPStatus: 403},
	}})
	store, err := datastore.Open(context.Background(), datastore.Options{Path: n.checkpoint, Now: n.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	cfg := n.config(func(c *settings) { c.WarmIPTarget = 1 })
	src, err := New(cfg.Config, cfg.Tuning, Options{Credentials: awslocal.Credentials()})
	if err != nil {
		t.Fatal(err)
	}
	err = src.Run(context.Background(), store)
	if err == nil || errorCode(err) != "UnauthorizedOperation" {
		t.Fatalf("Run = %v, want the first fill's UnauthorizedOperation", err)
	}
	if err := src.Run(context.Background(), store); !errors.Is(err, ErrAlreadyRunning) {
		t.Fatalf("second Run = %v, want ErrAlreadyRunning", err)
	}
}
