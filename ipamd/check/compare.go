package check

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/sandboxipam/sandboxipam/ipamd/api/hostveth"
	"github.com/sandboxipam/sandboxipam/ipamd/datastore"
	"github.com/sandboxipam/sandboxipam/runtime"
)

// compareRuntime: sandboxes without an address, addresses of sandboxes
// the runtime does not list, IPs the runtime reports otherwise, and the
// sandbox's own namespace.
func (c *comparison) compareRuntime() {
	listed := map[string]runtime.Sandbox{}
	for _, sb := range c.in.Sandboxes {
		listed[sb.ID] = sb
		// A stopped sandbox was DELeted: CRI may still report the IP it
		// had, which may be another pod's by now. Only a running one's
		// IPs count.
		if sb.HostNetwork || sb.State != runtime.StateReady {
			continue
		}
		for _, ip := range sb.IPs {
			c.hold(ip.Unmap(), "sandbox "+sb.ID, "runtime")
		}
		held := c.bySandbox[sb.ID]
		if len(held) == 0 {
			if !c.settling(sb.CreatedAt) {
				c.add(Disagreement{Kind: SandboxNoAddress, SandboxID: sb.ID,
					Words: fmt.Sprintf("the runtime lists running sandbox %s (pod %s) and ipamd holds no address for it", sb.ID, podName(sb.Namespace, sb.Name))})
			}
			continue
		}
		c.compareSandboxIPs(sb, held)
	}
	for _, a := range c.in.Assignments {
		if sb, ok := listed[a.SandboxID]; ok && !sb.HostNetwork {
			continue
		}
		if c.settling(a.AssignedAt) {
			continue
		}
		c.add(Disagreement{Kind: SandboxGone, Address: a.Address.IP.String(), SandboxID: a.SandboxID,
			Words: fmt.Sprintf("%s is assigned to sandbox %s (pod %s), which the runtime does not list", a.Address.IP, a.SandboxID, podName(a.Pod.Namespace, a.Pod.Name))})
	}
}

func (c *comparison) compareSandboxIPs(sb runtime.Sandbox, held []datastore.Assignment) {
	var addrs []netip.Addr
	for _, a := range held {
		addrs = append(addrs, a.IPs()...)
	}
	if len(sb.IPs) > 0 {
		for _, ip := range sb.IPs {
			if !slices.Contains(addrs, ip.Unmap()) {
				c.add(Disagreement{Kind: RuntimeIPDiffers, Address: ip.Unmap().String(), SandboxID: sb.ID,
					Words: fmt.Sprintf("the runtime reports %s for sandbox %s, and ipamd assigned it %s", ip.Unmap(), sb.ID, joinAddrs(addrs))})
			}
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
	links := c.in.Node.Links
	for _, a := range c.in.Assignments {
		if a.Wiring == datastore.WiringIPAMOnly {
			continue // another main plugin wired it: no pod link of ours
		}
		link := hostveth.Name(c.in.VethPrefix, a.SandboxID, a.IfName)
		routed, ok := links[link]
		for _, ip := range a.IPs() {
			if ok && slices.Contains(routed, ip) {
				continue
			}
			if c.settling(a.AssignedAt) {
				continue
			}
			why := "the node has no host veth " + link + " for it"
			if ok {
				why = "its host veth " + link + " routes " + joinAddrs(routed) + " and not it"
			}
			c.add(Disagreement{Kind: NoRoute, Address: ip.String(), SandboxID: a.SandboxID, Link: link,
				Words: fmt.Sprintf("%s is assigned to sandbox %s, and %s", ip, a.SandboxID, why)})
		}
	}
	names := make([]string, 0, len(links))
	for name := range links {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		owner, known := c.linkOwner[name]
		for _, ip := range links[name] {
			who := "link " + name
			if known {
				who = "sandbox " + owner
			}
			c.hold(ip, who, "kernel")
			if len(c.byIP[ip]) == 0 {
				c.add(Disagreement{Kind: UnheldRoute, Address: ip.String(), SandboxID: owner, Link: name,
					Words: fmt.Sprintf("the node routes %s through pod veth %s, and ipamd records nobody holding %s", ip, name, ip)})
			}
		}
	}
}

// twoHolders: an address that two sandboxes (or a sandbox and a foreign
// link) hold, by any source.
func (c *comparison) twoHolders() {
	for ip, who := range c.holders {
		if len(who) < 2 {
			continue
		}
		var parts []string
		for w, src := range who {
			parts = append(parts, w+" (by "+src+")")
		}
		slices.Sort(parts)
		c.add(Disagreement{Kind: TwoHolders, Address: ip.String(),
			Words: fmt.Sprintf("%s has %d holders: %s", ip, len(who), strings.Join(parts, ", "))})
	}
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
