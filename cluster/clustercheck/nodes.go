package clustercheck

import (
	"cmp"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/sandboxipam/sandboxipam/ipamd/introspect/schema"
)

// Held is what one node's ipamd holds, as `ipamctl pods` on the node
// lists it: the API shows only the pods it still has objects of, and a
// node cut off from the API server alone runs on after its Pods are
// deleted; its ipamd knows what it still gives out.
type Held struct {
	Node string
	// From names where it was read (the ipamd pod), for the words.
	From string
	Pods []HeldPod
}

// HeldPod is one assignment an ipamd holds.
type HeldPod struct {
	SandboxID, Namespace, Name string
	IPs                        []netip.Addr
}

// NotCompared is a node whose ipamd could not be read, and why.
type NotCompared struct {
	Node   string `json:"node"`
	Reason string `json:"reason"`
}

// ref names an assignment: the pod ipamd recorded, and the first 12
// characters of its sandbox ID (the key a CNI DEL matches on).
func (p HeldPod) ref() string {
	id := p.SandboxID
	if len(id) > 12 {
		id = id[:12]
	}
	return fmt.Sprintf("%s/%s (sandbox %s)", orNone(p.Namespace), orNone(p.Name), orNone(id))
}

// AddHeld records what node's ipamd holds, read from where (its pod); an
// address that does not parse is Unreadable.
func (s *Snapshot) AddHeld(node, from string, pods schema.Pods) {
	h := Held{Node: node, From: from}
	for _, p := range pods.Pods {
		hp := HeldPod{SandboxID: p.SandboxID, Namespace: p.Namespace, Name: p.Name}
		ips := p.IPs
		if len(ips) == 0 && p.IP != "" { // an ipamd older than the ips field
			ips = []string{p.IP}
		}
		for _, ip := range ips {
			a, err := netip.ParseAddr(ip)
			if err != nil {
				s.unreadable("ipamd of node "+node, fmt.Sprintf("%s holds %q: %v", hp.ref(), ip, err))
				continue
			}
			hp.IPs = append(hp.IPs, a.Unmap())
		}
		h.Pods = append(h.Pods, hp)
	}
	s.Held = append(s.Held, h)
}

// NotRead records that node's ipamd could not be read, and why.
func (s *Snapshot) NotRead(node, reason string) {
	s.Unread = append(s.Unread, NotCompared{Node: node, Reason: reason})
}

// holder is one ipamd's hold on an address.
type holder struct {
	node string
	pod  HeldPod
}

func (h holder) words() string { return fmt.Sprintf("node %s's ipamd for %s", h.node, h.pod.ref()) }

// compareHeld joins what the nodes' ipamds hold with the API's view:
// an address two nodes' ipamds hold, an address an ipamd holds outside
// its node's blocks and podCIDRs, and an address an ipamd holds while a
// pod on another node has it in the API (unless that node's ipamd holds
// it too: then the first finding says it). It also says which nodes were
// not compared: every Node, and every node that holds blocks, whose ipamd
// was not read.
func compareHeld(s Snapshot) ([]Finding, []NotCompared, int) {
	if !s.FromNodes {
		return nil, nil, 0
	}
	byAddr := map[netip.Addr][]holder{}
	for _, h := range s.Held {
		for _, p := range h.Pods {
			for _, a := range p.IPs {
				byAddr[a] = append(byAddr[a], holder{node: h.Node, pod: p})
			}
		}
	}
	out := heldOnTwoNodes(byAddr)
	out = append(out, heldOutsideNodes(s)...)
	out = append(out, heldByAnotherNode(s, byAddr)...)
	return out, notCompared(s), len(byAddr)
}

// heldOnTwoNodes finds addresses the ipamds of two or more nodes hold.
func heldOnTwoNodes(byAddr map[netip.Addr][]holder) []Finding {
	var out []Finding
	for a, hs := range byAddr {
		nodes := map[string]bool{}
		for _, h := range hs {
			nodes[h.node] = true
		}
		if len(nodes) < 2 {
			continue // one ipamd holding it twice is its own check's (ipamctl check)
		}
		slices.SortFunc(hs, func(x, y holder) int {
			return cmp.Or(strings.Compare(x.node, y.node), strings.Compare(x.pod.SandboxID, y.pod.SandboxID))
		})
		words := make([]string, len(hs))
		var names, pods []string
		for i, h := range hs {
			words[i] = h.words()
			pods = append(pods, h.pod.Namespace+"/"+h.pod.Name)
			if !slices.Contains(names, h.node) {
				names = append(names, h.node)
			}
		}
		out = append(out, Finding{Kind: HeldOnTwoNodes, Address: a.String(), Node: strings.Join(names, ","), Pods: pods,
			Words: fmt.Sprintf("%s is held by the ipamds of %d nodes: %s", a, len(names), strings.Join(words, ", "))})
	}
	return out
}

// heldOutsideNodes finds addresses an ipamd holds outside its node's
// blocks and podCIDRs.
func heldOutsideNodes(s Snapshot) []Finding {
	ranges := map[string][]netip.Prefix{}
	blocksOf := map[string][]netip.Prefix{}
	for _, b := range s.Blocks {
		ranges[b.NodeName] = append(ranges[b.NodeName], b.CIDR)
		blocksOf[b.NodeName] = append(blocksOf[b.NodeName], b.CIDR)
	}
	cidrsOf := map[string][]netip.Prefix{}
	for _, n := range s.Nodes {
		ranges[n.Name] = append(ranges[n.Name], n.PodCIDRs...)
		cidrsOf[n.Name] = n.PodCIDRs
	}
	var out []Finding
	for _, h := range s.Held {
		for _, p := range h.Pods {
			for _, a := range p.IPs {
				if slices.ContainsFunc(ranges[h.Node], func(r netip.Prefix) bool { return r.Contains(a) }) {
					continue
				}
				owner := ownerOf(s.Blocks, a)
				if len(ranges[h.Node]) == 0 && owner == "" {
					// A node with neither blocks nor podCIDRs takes its
					// addresses from elsewhere (the aws or static source):
					// only another node's block says one is out of place.
					continue
				}
				out = append(out, Finding{Kind: HeldOutsideNode, Address: a.String(), Node: h.Node, Pods: []string{p.Namespace + "/" + p.Name},
					Words: fmt.Sprintf("%s holds %s, outside its node's blocks (%s) and podCIDRs (%s)%s",
						holder{node: h.Node, pod: p}.words(), a, prefixes(sortedPrefixes(blocksOf[h.Node])), prefixes(cidrsOf[h.Node]), owner)})
			}
		}
	}
	return out
}

// ownerOf names the block a lies in, when it is another's.
func ownerOf(blocks []Block, a netip.Addr) string {
	for _, b := range blocks {
		if b.CIDR.Contains(a) {
			return fmt.Sprintf(": it lies in block %s of node %s", b.CIDR, b.NodeName)
		}
	}
	return ""
}

// heldByAnotherNode finds addresses an ipamd holds while a pod on another
// node has them in the API, unless that node's ipamd holds them too.
func heldByAnotherNode(s Snapshot, byAddr map[netip.Addr][]holder) []Finding {
	var out []Finding
	for _, p := range s.Pods {
		if !p.HoldsAddresses() {
			continue
		}
		for _, a := range p.IPs {
			hs := byAddr[a]
			if slices.ContainsFunc(hs, func(h holder) bool { return h.node == p.Node }) {
				continue // the pod's own ipamd holds it; two ipamds are HeldOnTwoNodes
			}
			for _, h := range hs {
				out = append(out, Finding{Kind: HeldByAnotherNode, Address: a.String(), Node: h.node, Pods: []string{h.pod.Namespace + "/" + h.pod.Name, p.Ref()},
					Words: fmt.Sprintf("%s holds %s, which pod %s on node %s has in the API", h.words(), a, p.Ref(), orNone(p.Node))})
			}
		}
	}
	return out
}

// notCompared lists the nodes whose ipamd was not read: the reason the
// reader gave, else that no ipamd of it was found; and the nodes that
// hold blocks but have no Node, whose ipamd nothing can reach through the
// API server.
func notCompared(s Snapshot) []NotCompared {
	done := map[string]bool{}
	for _, h := range s.Held {
		done[h.Node] = true
	}
	out := slices.Clone(s.Unread)
	for _, u := range s.Unread {
		done[u.Node] = true
	}
	for _, n := range s.Nodes {
		if !done[n.Name] {
			done[n.Name] = true
			out = append(out, NotCompared{Node: n.Name, Reason: "no ipamd was read on it"})
		}
	}
	gone := map[string][]netip.Prefix{}
	for _, b := range s.Blocks {
		if !done[b.NodeName] {
			gone[b.NodeName] = append(gone[b.NodeName], b.CIDR)
		}
	}
	for node, cidrs := range gone {
		out = append(out, NotCompared{Node: node, Reason: fmt.Sprintf("its Node is gone from the API, so its ipamd cannot be reached through the API server; "+
			"if the machine still runs (cut off from the API server alone), its pods may still hold addresses of its blocks (%s): ask it on the node (ipamctl check, ipamctl pods)",
			prefixes(sortedPrefixes(cidrs)))})
	}
	slices.SortFunc(out, func(a, b NotCompared) int {
		return cmp.Or(strings.Compare(a.Node, b.Node), strings.Compare(a.Reason, b.Reason))
	})
	return out
}

func sortedPrefixes(ps []netip.Prefix) []netip.Prefix {
	ps = slices.Clone(ps)
	slices.SortFunc(ps, func(a, b netip.Prefix) int {
		return cmp.Or(a.Addr().Compare(b.Addr()), cmp.Compare(a.Bits(), b.Bits()))
	})
	return ps
}
