package aws

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"reflect"
	"testing"

	"github.com/sandboxipam/sandboxipam/internal/awslocal"
)

// cloudPrefixes lists the IPv4 prefixes EC2 holds on the attached ENIs,
// by device index.
func (n *node) cloudPrefixes() map[int][]string {
	out := map[int][]string{}
	for _, e := range n.cloud.ENIs() {
		if e.AttachmentID == "" {
			continue
		}
		for _, p := range e.IPv4Prefixes {
			out[e.DeviceIndex] = append(out[e.DeviceIndex], p.String())
		}
	}
	return out
}

func pdConfig(n *node, warmIP int) settings {
	return n.config(func(c *settings) { c.EnablePrefixDelegation = true; c.WarmIPTarget = warmIP })
}

// Prefix delegation: the primary ENI gets /28 prefixes, the pool grows by
// whole prefixes when the warm target in addresses is short, pods get the
// prefixes' exact addresses, and a prefix goes back to EC2 only once no
// address in it is held or cooling.
func TestPrefixDelegationGrowsByPrefixAndReleasesOnlyFreePrefixes(t *testing.T) {
	n := newNode(t, awslocal.Options{}) // t3.medium: 5 slots per ENI
	before := n.cloud.Calls()
	n.start(pdConfig(n, 4))
	n.wantPool(16, 16, 1)
	if got := n.cloudPrefixes(); !reflect.DeepEqual(got, map[int][]string{0: {"198.18.0.16/28"}}) {
		t.Fatalf("prefixes in EC2 %v, want 198.18.0.16/28 on the primary ENI (198.18.0.0/28 holds the reserved addresses and the primary IP)", got)
	}
	ips := n.addAll(0, 13) // the 13th ADD leaves 3 free: below the target of 4
	if ips[0] != netip.MustParseAddr("198.18.0.16") || ips[12] != netip.MustParseAddr("198.18.0.28") {
		t.Fatalf("pods got %s .. %s, want 198.18.0.16 .. 198.18.0.28", ips[0], ips[12])
	}
	n.wantPool(32, 19, 1)
	if got := n.cloudPrefixes(); !reflect.DeepEqual(got, map[int][]string{0: {"198.18.0.16/28", "198.18.0.32/28"}}) {
		t.Fatalf("prefixes in EC2 %v after growth", got)
	}
	if ip := n.add(13); ip != netip.MustParseAddr("198.18.0.29") {
		t.Fatalf("pod 13 got %s", ip)
	}
	n.adjust()
	if calls := callsSince(n.cloud, before); calls["AssignPrivateIpAddresses"] != 2 || calls["CreateNetworkInterface"] != 0 {
		t.Fatalf("EC2 calls %v: want two prefix assignments and no new ENI", calls)
	}

	// Pod 0 holds an address of the first prefix; the second prefix's
	// addresses are free once pods 13 .. went: it goes back, the first
	// stays.
	for i := 1; i <= 13; i++ {
		n.del(i)
	}
	n.adjust() // cooling: nothing goes back yet
	if got := n.cloudPrefixes(); len(got[0]) != 2 {
		t.Fatalf("prefixes %v released while their addresses cool down", got)
	}
	n.clock.Advance(testCooldown)
	n.adjust()
	if got := n.cloudPrefixes(); !reflect.DeepEqual(got, map[int][]string{0: {"198.18.0.16/28"}}) {
		t.Fatalf("prefixes in EC2 %v, want only 198.18.0.16/28 (pod 0 holds 198.18.0.16)", got)
	}
	n.wantPool(16, 15, 1)
	if enis := n.src.ENIs(); len(enis) != 1 || !reflect.DeepEqual(enis[0].Prefixes, []netip.Prefix{netip.MustParsePrefix("198.18.0.16/28")}) ||
		enis[0].IPsTotal != 16 || enis[0].IPsAssigned != 1 {
		t.Fatalf("ENIs = %+v", enis)
	}
	if ip := n.add(20); ip == netip.MustParseAddr("198.18.0.16") || !netip.MustParsePrefix("198.18.0.16/28").Contains(ip) {
		t.Fatalf("pod 20 got %s", ip)
	}
}

// A prefix that holds an address of a pod is never given back, even when
// the targets would allow it.
func TestPrefixDelegationNeverReleasesAPrefixWithAHeldAddress(t *testing.T) {
	n := newNode(t, awslocal.Options{})
	n.start(pdConfig(n, 1))
	n.addAll(0, 16) // fills 198.18.0.16/28; the 16th ADD grows 198.18.0.32/28
	if ip := n.add(16); ip != netip.MustParseAddr("198.18.0.32") {
		t.Fatalf("pod 16 got %s", ip)
	}
	for i := 1; i < 16; i++ {
		n.del(i)
	}
	n.clock.Advance(testCooldown)
	n.adjust()
	// Pods 0 (198.18.0.16) and 16 (198.18.0.32) hold one address in each
	// prefix: both stay, whatever the surplus.
	if got := n.cloudPrefixes(); !reflect.DeepEqual(got, map[int][]string{0: {"198.18.0.16/28", "198.18.0.32/28"}}) {
		t.Fatalf("prefixes in EC2 %v, want both kept", got)
	}
	n.del(16)
	n.clock.Advance(testCooldown)
	n.adjust()
	if got := n.cloudPrefixes(); !reflect.DeepEqual(got, map[int][]string{0: {"198.18.0.16/28"}}) {
		t.Fatalf("prefixes in EC2 %v, want 198.18.0.32/28 given back once free", got)
	}
}

// A subnet with free addresses but no free /28 answers
// InsufficientCidrBlocks, as EC2 does: the source reports the subnet
// full and keeps serving what it has.
func TestPrefixDelegationInsufficientCidrBlocks(t *testing.T) {
	// 198.18.0.0/26: .0/28 has the reserved addresses and the primary IP,
	// .48/28 the reserved broadcast: two prefixes only.
	n := newNode(t, awslocal.Options{SubnetCIDR: netip.MustParsePrefix("198.18.0.0/26")})
	n.start(pdConfig(n, 20))
	n.wantPool(32, 32, 1)
	for i := range 13 {
		n.add(i)
	}
	err := n.src.Adjust(context.Background())
	if !errors.Is(err, ErrSubnetFull) || errorCode(err) != "InsufficientCidrBlocks" {
		t.Fatalf("Adjust = %v, want ErrSubnetFull from InsufficientCidrBlocks", err)
	}
	if st := n.src.Status(); st.GrowthBlocked != GrowthBlockedSubnetFull || st.Total != 32 || st.Free != 19 {
		t.Fatalf("Status = %+v", st)
	}
	if ip := n.add(13); ip != netip.MustParseAddr("198.18.0.29") {
		t.Fatalf("pod 13 got %s", ip)
	}
}

// A restart adopts the delegated prefixes from EC2 and keeps every pod's
// address: no EC2 call assigns anything, and the next pod gets the next
// address.
func TestPrefixDelegationRestartAdoptsPrefixes(t *testing.T) {
	n := newNode(t, awslocal.Options{})
	n.start(pdConfig(n, 4))
	ips := n.addAll(0, 13)
	n.shutdown()
	before := n.cloud.Calls()
	n.start(pdConfig(n, 4))
	if calls := callsSince(n.cloud, before); calls["AssignPrivateIpAddresses"] != 0 || calls["UnassignPrivateIpAddresses"] != 0 {
		t.Fatalf("EC2 calls at restart %v: want prefixes adopted, none assigned or unassigned", calls)
	}
	n.wantPool(32, 19, 1)
	for i, ip := range ips {
		a, ok := n.store.Lookup(podKey(i))
		if !ok || a.Address.IP != ip || a.Address.Group != n.src.ENIs()[0].ID {
			t.Fatalf("pod %d after restart: %+v, want %s", i, a, ip)
		}
	}
	if ip := n.add(13); ip != netip.MustParseAddr("198.18.0.29") {
		t.Fatalf("pod 13 after restart got %s, want 198.18.0.29", ip)
	}
}

// IPv6 mode: one /80 on the primary ENI, IPv6 pod addresses from it, and
// a restart adopts it without a second AssignIpv6Addresses.
func TestIPv6ModeUsesOnePrefixOfThePrimaryENI(t *testing.T) {
	n := newNode(t, awslocal.Options{})
	before := n.cloud.Calls()
	n.start(n.config(func(c *settings) { c.EnableIPv6 = true }))
	if calls := callsSince(n.cloud, before); calls["AssignIpv6Addresses"] != 1 || calls["AssignPrivateIpAddresses"] != 0 || calls["CreateNetworkInterface"] != 0 {
		t.Fatalf("EC2 calls %v: want one AssignIpv6Addresses and nothing for IPv4", calls)
	}
	for i, want := range []string{"2001:db8:1::1", "2001:db8:1::2"} {
		if ip := n.add(i); ip != netip.MustParseAddr(want) {
			t.Fatalf("pod %d got %s, want %s", i, ip, want)
		}
	}
	n.adjust()
	n.shutdown()
	before = n.cloud.Calls()
	n.start(n.config(func(c *settings) { c.EnableIPv6 = true }))
	if calls := callsSince(n.cloud, before); calls["AssignIpv6Addresses"] != 0 {
		t.Fatalf("EC2 calls at restart %v: the /80 must be adopted", calls)
	}
	if ip := n.add(2); ip != netip.MustParseAddr("2001:db8:1::3") {
		t.Fatalf("pod 2 after restart got %s", ip)
	}
	if a, ok := n.store.Lookup(podKey(0)); !ok || a.Address.IP != netip.MustParseAddr("2001:db8:1::1") {
		t.Fatalf("pod 0 after restart: %+v", a)
	}
	var got []string
	for _, e := range n.cloud.ENIs() {
		for _, p := range e.IPv6Prefixes {
			got = append(got, fmt.Sprint(e.DeviceIndex, " ", p))
		}
	}
	if !reflect.DeepEqual(got, []string{"0 2001:db8:1::/80"}) {
		t.Fatalf("IPv6 prefixes in EC2 %v", got)
	}
}
