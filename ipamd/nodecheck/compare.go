package nodecheck

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/sandboxipam/sandboxipam/ipamd/datastore"
	"github.com/sandboxipam/sandboxipam/ipamd/join"
	"github.com/sandboxipam/sandboxipam/runtime"
)

// compareRuntime: sandboxes without an address, addresses of sandboxes
// the runtime does not list, IPs the runtime reports otherwise, and the
// sandbox's own namespace.
func (c *comparison) compareRuntime() {
	for _, row := range c.view.Sandboxes {
		sb := row.Sandbox
		// A stopped sandbox was DELeted: it needs no address, and what it
		// still reports is judged with the other claims (twoHolders).
		if sb.State != runtime.StateReady {
			continue
		}
		if len(row.Assignments) == 0 {
			if !c.settling(sb.CreatedAt) {
				c.add(Disagreement{Kind: SandboxNoAddress, SandboxID: sb.ID,
					Words: fmt.Sprintf("the runtime lists running sandbox %s (pod %s) and ipamd holds no address for it", sb.ID, podName(sb.Namespace, sb.Name))})
			}
			continue
		}
		held := make([]datastore.Assignment, len(row.Assignments))
		for i, j := range row.Assignments {
			held[i] = c.in.Assignments[j]
		}
		c.compareSandboxIPs(sb, held)
	}
	for i, row := range c.view.Assignments {
		if row.PodListed() || c.settling(row.AssignedAt) {
			continue
		}
		a := c.in.Assignments[i]
		c.add(Disagreement{Kind: SandboxGone, Address: a.Address.IP.String(), SandboxID: a.SandboxID,
			Words: fmt.Sprintf("%s is assigned to sandbox %s (pod %s), which the runtime does not list", a.Address.IP, a.SandboxID, podName(a.Pod.Namespace, a.Pod.Name))})
	}
}

func (c *comparison) compareSandboxIPs(sb runtime.Sandbox, held []datastore.Assignment) {
	var addrs []netip.Addr
	for _, a := range held {
		addrs = append(addrs, a.IPs()...)
	}
	for _, ip := range sb.IPs {
		if !slices.Contains(addrs, ip.Unmap()) {
			c.add(Disagreement{Kind: RuntimeIPDiffers, Address: ip.Unmap().String(), SandboxID: sb.ID,
				Words: fmt.Sprintf("the runtime reports %s for sandbox %s, and ipamd assigned it %s", ip.Unmap(), sb.ID, joinAddrs(addrs))})
		}
	}
	if c.in.NetNS == nil || sb.NetNS == "" {
		return
	}
	inside, err := c.in.NetNS(sb.NetNS)
	if err != nil {
		c.note("the network namespace of sandbox %s was not read: %v", sb.ID, err)
		return
	}
	for _, a := range held {
		for _, ip := range a.IPs() {
			if !slices.Contains(inside, ip) && !c.settling(a.AssignedAt) {
				c.add(Disagreement{Kind: NotInNetNS, Address: ip.String(), SandboxID: sb.ID,
					Words: fmt.Sprintf("%s is assigned to sandbox %s, and its network namespace %s has %s instead", ip, sb.ID, sb.NetNS, joinAddrs(inside))})
			}
		}
	}
}

// compareNode: assignments without their route, routes nobody holds.
func (c *comparison) compareNode() {
	for _, row := range c.view.Assignments {
		if row.IPAMOnly {
			continue // another main plugin wired it: no pod link of ours
		}
		for _, ip := range row.IPs {
			if row.LinkFound && slices.Contains(row.LinkIPs, ip) || c.settling(row.AssignedAt) {
				continue
			}
			why := "the node has no host veth " + row.Link + " for it"
			if row.LinkFound {
				why = "its host veth " + row.Link + " routes " + joinAddrs(row.LinkIPs) + " and not it"
			}
			c.add(Disagreement{Kind: NoRoute, Address: ip.String(), SandboxID: row.SandboxID, Link: row.Link,
				Words: fmt.Sprintf("%s is assigned to sandbox %s, and %s", ip, row.SandboxID, why)})
		}
	}
	for _, l := range c.view.Links {
		for _, ip := range l.IPs {
			if !c.recorded(ip) {
				c.add(Disagreement{Kind: UnheldRoute, Address: ip.String(), SandboxID: l.Owner, Link: l.Name,
					Words: fmt.Sprintf("the node routes %s through pod veth %s, and ipamd records nobody holding %s", ip, l.Name, ip)})
			}
		}
	}
}

// twoHolders: an address that two sandboxes (or a sandbox and a foreign
// link) hold, by any source: the rows package join calls Contested, which
// the datastore quarantines.
func (c *comparison) twoHolders() {
	for _, row := range c.addrs {
		if row.Class != join.Contested {
			continue
		}
		by := map[string]string{}
		for _, id := range row.Recorded {
			by["sandbox "+id] = "ipamd"
		}
		for _, cl := range row.Claims {
			if _, ok := by[cl.Holder()]; !ok {
				by[cl.Holder()] = claimSource(cl)
			}
		}
		parts := make([]string, 0, len(by))
		for w, src := range by {
			parts = append(parts, w+" (by "+src+")")
		}
		slices.Sort(parts)
		c.add(Disagreement{Kind: TwoHolders, Address: row.IP.String(),
			Words: fmt.Sprintf("%s has %d holders: %s", row.IP, len(by), strings.Join(parts, ", "))})
	}
}

// claimSource names a claim's source as ipamctl check always has.
func claimSource(cl join.Claim) string {
	switch {
	case cl.Link != "":
		return "kernel"
	case !cl.Ready:
		return "runtime, stopped"
	}
	return cl.Source
}

func podName(namespace, name string) string {
	if name == "" {
		return "unknown"
	}
	return namespace + "/" + name
}

func joinAddrs(addrs []netip.Addr) string {
	if len(addrs) == 0 {
		return "no address"
	}
	parts := make([]string, len(addrs))
	for i, a := range addrs {
		parts[i] = a.String()
	}
	return strings.Join(parts, ", ")
}

// compareAddr orders addresses numerically, empty ones last.
func compareAddr(a, b string) int {
	pa, erra := netip.ParseAddr(a)
	pb, errb := netip.ParseAddr(b)
	switch {
	case erra != nil && errb != nil:
		return strings.Compare(a, b)
	case erra != nil:
		return 1
	case errb != nil:
		return -1
	}
	return pa.Compare(pb)
}
