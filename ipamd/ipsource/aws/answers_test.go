package aws

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/sandboxipam/sandboxipam/internal/awslocal"
)

// TestAssignmentThatAssignsNothingBacksOff: an EC2 that answers every
// assignment with success and nothing assigned (issue 39: 1,730 calls in
// 20 s and no /readyz, the first fill looping under adjustMu). The first
// fill ends Ready with an empty pool; over 20 simulated seconds of loop
// ticks EC2 sees one assignment and one read-back at t=0, 2, 6 and 14 s
// (PoolCheckInterval 1s doubled per empty step: waits of 2, 4, 8 and 16
// s), and nothing else; once EC2 assigns again, the pool fills.
func TestAssignmentThatAssignsNothingBacksOff(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts awslocal.Options
		edit func(*settings)
		fill int
	}{
		{"addresses", awslocal.Options{InstanceType: "t3.medium"}, func(c *settings) { c.WarmIPTarget = 5 }, 5},
		{"prefixes", awslocal.Options{InstanceType: "m5.large"}, func(c *settings) { c.EnablePrefixDelegation = true }, 16},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := newNode(t, tc.opts)
			// More empty answers than any bounded fill asks for: a loop
			// without backoff spends them all before Ready.
			n.cloud.SetFaults(awslocal.Faults{AssignNothing: 200})
			n.start(n.config(func(c *settings) {
				tc.edit(c)
				c.PoolCheckInterval, c.MaxBackoff = time.Second, 20*time.Second
			}))
			if st := n.src.Status(); st.Total != 0 || st.GrowthBlocked != GrowthBlockedNothingAssigned {
				t.Fatalf("after the first fill: Status = %+v, want an empty pool waiting after nothing assigned", st)
			}
			for range 20 {
				n.clock.Advance(time.Second)
				if err := n.src.Adjust(context.Background()); !errors.Is(err, ErrNothingAssigned) {
					t.Fatalf("Adjust = %v, want ErrNothingAssigned", err)
				}
			}
			want := []string{"DescribeInstanceTypes", "DescribeNetworkInterfaces", "DescribeNetworkInterfaces"}
			for range 4 {
				want = append(want, "AssignPrivateIpAddresses", "DescribeNetworkInterfaces")
			}
			if got := actions(n.cloud.CallLog()); !slices.Equal(got, want) {
				t.Fatalf("EC2 calls in 20 s = %d %v\nwant %d %v", len(got), got, len(want), want)
			}

			n.cloud.SetFaults(awslocal.Faults{})
			n.clock.Advance(10 * time.Second) // t=30: the fifth wait (16 s) is over
			n.adjust()
			if st := n.src.Status(); st.Total != tc.fill || st.GrowthBlocked != "" {
				t.Fatalf("once EC2 assigns: Status = %+v, want %d addresses and growth unblocked", st, tc.fill)
			}
		})
	}
}

// TestAnswerListingUnaskedAddressesIsChecked: an AssignPrivateIpAddresses
// answer for the second ENI lists, besides the address it assigned, one
// address ipamd did not get. The pool takes the assigned address only,
// the refusal is counted under its reason, EC2 sees the assignment and
// one read-back, and the shrink that follows unassigns that address and
// nothing else.
func TestAnswerListingUnaskedAddressesIsChecked(t *testing.T) {
	for _, tc := range []struct {
		name   string
		reason string
		extra  func(n *node, second awslocal.ENI) netip.Addr
	}{
		{"ENI primary", RefusedPrimary, func(_ *node, second awslocal.ENI) netip.Addr { return second.PrimaryIP }},
		{"node primary", RefusedPrimary, func(n *node, _ awslocal.ENI) netip.Addr { return n.cloudENI(0).PrimaryIP }},
		{"outside subnet", RefusedOutsideSubnet, func(*node, awslocal.ENI) netip.Addr { return netip.MustParseAddr("10.9.8.7") }},
		{"in pool", RefusedInPool, func(n *node, _ awslocal.ENI) netip.Addr { return n.cloudENI(0).SecondaryIPs[1] }},
		{"not on the ENI", RefusedNotOnENI, func(*node, awslocal.ENI) netip.Addr { return netip.MustParseAddr("198.18.15.200") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// t3.small: 3 pod addresses per ENI. WarmIPTarget 4 fills the
			// primary ENI and puts one address on a second.
			n := newNode(t, awslocal.Options{InstanceType: "t3.small"})
			n.start(n.config(func(c *settings) { c.WarmIPTarget = 4 }))
			second := n.cloudENI(1)
			before := n.poolContents()
			extra := tc.extra(n, second)
			n.cloud.SetFaults(awslocal.Faults{AssignExtra: func(awslocal.ENI) []netip.Addr { return []netip.Addr{extra} }})
			n.cloud.ResetCalls()

			n.add(0)
			n.adjust() // one short: one address on the second ENI
			assigned := n.cloudENI(1).SecondaryIPs[1]
			want := append(before, second.ID+" "+assigned.String()+"/32")
			slices.Sort(want)
			if got := n.poolContents(); !slices.Equal(got, want) {
				t.Fatalf("pool = %v\nwant %v (EC2 also listed %s)", got, want, extra)
			}
			wantCalls := []string{
				"AssignPrivateIpAddresses NetworkInterfaceId=" + second.ID + " SecondaryPrivateIpAddressCount=1",
				"DescribeNetworkInterfaces Filter.1.Name=network-interface-id Filter.1.Value.1=" + second.ID,
			}
			if got := calls(n.cloud.CallLog()); !slices.Equal(got, wantCalls) {
				t.Fatalf("EC2 calls = %q\nwant %q", got, wantCalls)
			}
			for _, r := range RefusalReasons {
				wantN := 0.0
				if r == tc.reason {
					wantN = 1
				}
				if got := testutil.ToFloat64(n.src.refused.WithLabelValues(r)); got != wantN {
					t.Fatalf("ipamd_aws_refused_addresses_total{reason=%q} = %v, want %v", r, got, wantN)
				}
			}

			// Shrink: one address too many once pod 0's has cooled.
			n.cloud.SetFaults(awslocal.Faults{})
			n.del(0)
			n.clock.Advance(2 * testCooldown)
			n.cloud.ResetCalls()
			n.adjust()
			got := calls(n.cloud.CallLog())
			unassign := "UnassignPrivateIpAddresses NetworkInterfaceId=" + second.ID + " PrivateIpAddress.1="
			if len(got) != 1 || (got[0] != unassign+second.SecondaryIPs[0].String() && got[0] != unassign+assigned.String()) {
				t.Fatalf("shrink's EC2 calls = %q\nwant one %s of %s or %s", got, unassign, second.SecondaryIPs[0], assigned)
			}
		})
	}
}

// cloudENI is the attached ENI at a device index, as EC2 holds it.
func (n *node) cloudENI(device int) awslocal.ENI {
	n.t.Helper()
	for _, e := range n.cloud.ENIs() {
		if e.InstanceID != "" && e.DeviceIndex == device {
			return e
		}
	}
	n.t.Fatalf("no ENI attached at device index %d", device)
	return awslocal.ENI{}
}

// poolContents is every block of the datastore's pool as "group prefix",
// sorted.
func (n *node) poolContents() []string {
	var out []string
	for _, r := range n.store.View().Ranges {
		out = append(out, r.Range.Group+" "+r.Range.Prefix.String())
	}
	slices.Sort(out)
	return out
}

func actions(log []awslocal.Call) []string {
	out := make([]string, len(log))
	for i, c := range log {
		out[i] = c.Action
	}
	return out
}

// calls renders each call as its action and sorted parameters.
func calls(log []awslocal.Call) []string {
	out := make([]string, len(log))
	for i, c := range log {
		var params []string
		for k, v := range c.Params {
			params = append(params, fmt.Sprintf("%s=%s", k, strings.Join(v, ",")))
		}
		slices.Sort(params)
		out[i] = strings.TrimSpace(c.Action + " " + strings.Join(params, " "))
	}
	return out
}
