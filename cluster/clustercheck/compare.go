package clustercheck

import (
	"cmp"
	"fmt"
	"net/netip"
	"slices"
	"strings"
)

// Kind names a finding.
type Kind string

// The kinds of finding, in the order a report lists them.
const (
	// DuplicateAddress: one address held by two or more pods.
	DuplicateAddress Kind = "duplicate-address"
	// PodOutsideNode: a pod's address lies in none of its node's blocks
	// and podCIDRs.
	PodOutsideNode Kind = "pod-outside-node"
	// BlockOverlap: two blocks share addresses.
	BlockOverlap Kind = "block-overlap"
	// PoolOverlap: two pools' CIDRs share addresses; ipamd claims from
	// neither part.
	PoolOverlap Kind = "pool-overlap"
	// BlockOutsidePool: a block lies outside its pool's CIDRs, is not of
	// its pool's block size, or its pool does not exist.
	BlockOutsidePool Kind = "block-outside-pool"
	// BlockNodeGone: the Node that claimed a block does not exist, or
	// exists with another UID (registered again).
	BlockNodeGone Kind = "block-node-gone"
	// UnreadableObject: an object the check could not read.
	UnreadableObject Kind = "unreadable"
	// HeldOnTwoNodes: one address held by the ipamds of two or more
	// nodes (what the nodes hold, read from each).
	HeldOnTwoNodes Kind = "held-on-two-nodes"
	// HeldByAnotherNode: an ipamd holds an address that a pod on another
	// node has in the API.
	HeldByAnotherNode Kind = "held-by-another-node"
	// HeldOutsideNode: an ipamd holds an address outside its node's
	// blocks and podCIDRs.
	HeldOutsideNode Kind = "held-outside-node"
)

var kindOrder = []Kind{DuplicateAddress, HeldOnTwoNodes, HeldByAnotherNode, PodOutsideNode, HeldOutsideNode,
	BlockOverlap, PoolOverlap, BlockOutsidePool, BlockNodeGone, UnreadableObject}

// Finding is one thing found wrong, in words and in fields.
type Finding struct {
	Kind    Kind     `json:"kind"`
	Words   string   `json:"words"`
	Address string   `json:"address,omitempty"`
	Blocks  []string `json:"blocks,omitempty"`
	Node    string   `json:"node,omitempty"`
	Pods    []string `json:"pods,omitempty"`
}

// Report is the outcome of Compare: what was compared, and the findings.
type Report struct {
	Pools  int `json:"pools"`
	Blocks int `json:"blocks"`
	Nodes  int `json:"nodes"`
	Pods   int `json:"pods"`
	// Addresses counts the distinct addresses pods hold.
	Addresses int `json:"addresses"`
	// FromNodes: the nodes' ipamds were asked (Snapshot.FromNodes);
	// NodesRead of them answered, holding HeldAddresses distinct
	// addresses, and NotCompared are the nodes that were not compared.
	FromNodes     bool          `json:"fromNodes"`
	NodesRead     int           `json:"nodesRead"`
	HeldAddresses int           `json:"heldAddresses"`
	NotCompared   []NotCompared `json:"notCompared,omitempty"`
	Findings      []Finding     `json:"findings"`
}

// Duplicates counts the findings of one address on two holders: two
// pods in the API, two nodes' ipamds, or an ipamd and another node's pod.
func (r Report) Duplicates() int {
	return r.Count(DuplicateAddress) + r.Count(HeldOnTwoNodes) + r.Count(HeldByAnotherNode)
}

// Count is the number of findings of kind.
func (r Report) Count(kind Kind) int {
	n := 0
	for _, f := range r.Findings {
		if f.Kind == kind {
			n++
		}
	}
	return n
}

// Kinds are every kind of finding, in report order.
func Kinds() []Kind { return slices.Clone(kindOrder) }

// heldKinds are the kinds only what the nodes hold can show
// (Snapshot.FromNodes).
var heldKinds = []Kind{HeldOnTwoNodes, HeldByAnotherNode, HeldOutsideNode}

// APIKinds are the kinds a check of the API's objects alone can find, in
// report order: Kinds without the ones that need what the nodes hold.
func APIKinds() []Kind {
	return slices.DeleteFunc(Kinds(), func(k Kind) bool { return slices.Contains(heldKinds, k) })
}

// Compare judges s. With s.FromNodes it joins what each node's ipamd
// holds with the API's view too (compareHeld). It is pure: the same snapshot gives the same report,
// findings in a fixed order (by kind, then by what they name).
func Compare(s Snapshot) Report {
	r := Report{Pools: len(s.Pools), Blocks: len(s.Blocks), Nodes: len(s.Nodes), Pods: len(s.Pods)}
	var held map[netip.Addr][]string
	held, r.Findings = duplicates(s.Pods)
	r.Addresses = len(held)
	r.Findings = append(r.Findings, podsOutsideNodes(s)...)
	r.Findings = append(r.Findings, overlaps(s.Blocks)...)
	r.Findings = append(r.Findings, poolOverlaps(s.Pools)...)
	r.Findings = append(r.Findings, blocksOutsidePools(s)...)
	r.Findings = append(r.Findings, blocksOfGoneNodes(s)...)
	byNodes, notCompared, heldAddrs := compareHeld(s)
	r.Findings = append(r.Findings, byNodes...)
	r.FromNodes, r.NodesRead, r.HeldAddresses, r.NotCompared = s.FromNodes, len(s.Held), heldAddrs, notCompared
	for _, u := range s.Unreadable {
		r.Findings = append(r.Findings, Finding{Kind: UnreadableObject, Words: u.Object + " cannot be read: " + u.Reason})
	}
	slices.SortStableFunc(r.Findings, func(a, b Finding) int {
		return cmp.Or(cmp.Compare(slices.Index(kindOrder, a.Kind), slices.Index(kindOrder, b.Kind)), strings.Compare(a.Words, b.Words))
	})
	return r
}

// duplicates indexes the addresses pods hold and finds those held by more
// than one pod.
func duplicates(pods []Pod) (map[netip.Addr][]string, []Finding) {
	held := map[netip.Addr][]string{}
	for _, p := range pods {
		if !p.HoldsAddresses() {
			continue
		}
		for _, a := range p.IPs {
			if !slices.Contains(held[a], p.Ref()) {
				held[a] = append(held[a], p.Ref())
			}
		}
	}
	nodeOf := map[string]string{}
	for _, p := range pods {
		nodeOf[p.Ref()] = p.Node
	}
	var out []Finding
	for a, refs := range held {
		if len(refs) < 2 {
			continue
		}
		slices.Sort(refs)
		where := make([]string, len(refs))
		for i, ref := range refs {
			where[i] = fmt.Sprintf("%s (node %s)", ref, orNone(nodeOf[ref]))
		}
		out = append(out, Finding{Kind: DuplicateAddress, Address: a.String(), Pods: refs,
			Words: fmt.Sprintf("%s is held by %d pods: %s", a, len(refs), strings.Join(where, ", "))})
	}
	return held, out
}

// podsOutsideNodes finds pod addresses in none of their node's blocks
// and podCIDRs.
func podsOutsideNodes(s Snapshot) []Finding {
	ranges := map[string][]netip.Prefix{}
	for _, b := range s.Blocks {
		ranges[b.NodeName] = append(ranges[b.NodeName], b.CIDR)
	}
	blocksOf := map[string]string{}
	for name, rs := range ranges {
		slices.SortFunc(rs, func(a, b netip.Prefix) int {
			return cmp.Or(a.Addr().Compare(b.Addr()), cmp.Compare(a.Bits(), b.Bits()))
		})
		blocksOf[name] = prefixes(rs)
	}
	nodes := map[string]Node{}
	for _, n := range s.Nodes {
		nodes[n.Name] = n
		ranges[n.Name] = append(ranges[n.Name], n.PodCIDRs...)
	}
	var out []Finding
	for _, p := range s.Pods {
		if !p.HoldsAddresses() {
			continue
		}
		for _, a := range p.IPs {
			if slices.ContainsFunc(ranges[p.Node], func(r netip.Prefix) bool { return r.Contains(a) }) {
				continue
			}
			if _, registered := nodes[p.Node]; registered && len(ranges[p.Node]) == 0 && ownerOf(s.Blocks, a) == "" {
				// A node with neither blocks nor podCIDRs takes its
				// addresses from elsewhere (the aws or static source):
				// only another node's block says one is out of place.
				continue
			}
			out = append(out, Finding{Kind: PodOutsideNode, Address: a.String(), Node: p.Node, Pods: []string{p.Ref()},
				Words: fmt.Sprintf("pod %s on node %s holds %s, outside %s", p.Ref(), orNone(p.Node), a, nodeRanges(p.Node, nodes, blocksOf[p.Node]))})
		}
	}
	return out
}

func nodeRanges(name string, nodes map[string]Node, blocks string) string {
	n, ok := nodes[name]
	if !ok {
		return fmt.Sprintf("any range of node %s, which is not registered and holds blocks (%s)", orNone(name), orNone(blocks))
	}
	return fmt.Sprintf("its node's blocks (%s) and podCIDRs (%s)", orNone(blocks), prefixes(n.PodCIDRs))
}

// overlaps finds blocks that share addresses. Canonical prefixes either
// nest or are disjoint, so in address order a block overlaps an earlier
// one exactly when it lies inside the outermost block still open.
func overlaps(blocks []Block) []Finding {
	sorted := slices.Clone(blocks)
	slices.SortFunc(sorted, func(a, b Block) int {
		return cmp.Or(a.CIDR.Addr().Compare(b.CIDR.Addr()), cmp.Compare(a.CIDR.Bits(), b.CIDR.Bits()), strings.Compare(a.Name, b.Name))
	})
	var out []Finding
	var open *Block
	for i := range sorted {
		b := &sorted[i]
		if open == nil || !open.CIDR.Overlaps(b.CIDR) {
			open = b
			continue
		}
		out = append(out, Finding{Kind: BlockOverlap, Blocks: []string{open.Name, b.Name},
			Words: fmt.Sprintf("blocks %s (%s, node %s) and %s (%s, node %s) overlap", open.Name, open.CIDR, open.NodeName, b.Name, b.CIDR, b.NodeName)})
	}
	return out
}

// blocksOutsidePools finds blocks of no existing pool, or outside it.
func blocksOutsidePools(s Snapshot) []Finding {
	pools := map[string]Pool{}
	for _, p := range s.Pools {
		pools[p.Name] = p
	}
	var out []Finding
	for _, b := range s.Blocks {
		p, ok := pools[b.Pool]
		switch {
		case !ok:
			out = append(out, Finding{Kind: BlockOutsidePool, Blocks: []string{b.Name}, Node: b.NodeName,
				Words: fmt.Sprintf("block %s (%s, node %s) names pool %s, which does not exist", b.Name, b.CIDR, b.NodeName, b.Pool)})
		case !slices.ContainsFunc(p.CIDRs, func(c netip.Prefix) bool { return c.Bits() <= b.CIDR.Bits() && c.Contains(b.CIDR.Addr()) }):
			out = append(out, Finding{Kind: BlockOutsidePool, Blocks: []string{b.Name}, Node: b.NodeName,
				Words: fmt.Sprintf("block %s (%s, node %s) lies outside pool %s (%s)", b.Name, b.CIDR, b.NodeName, p.Name, prefixes(p.CIDRs))})
		case p.BlockBits[b.CIDR.Addr().BitLen()] != 0 && p.BlockBits[b.CIDR.Addr().BitLen()] != b.CIDR.Bits():
			out = append(out, Finding{Kind: BlockOutsidePool, Blocks: []string{b.Name}, Node: b.NodeName,
				Words: fmt.Sprintf("block %s (%s, node %s) is not of pool %s's block size /%d", b.Name, b.CIDR, b.NodeName, p.Name, p.BlockBits[b.CIDR.Addr().BitLen()])})
		}
	}
	return out
}

// poolOverlaps finds two pools' CIDRs that share addresses, each pair
// once, the pool of smaller name first.
func poolOverlaps(pools []Pool) []Finding {
	sorted := slices.Clone(pools)
	slices.SortFunc(sorted, func(a, b Pool) int { return strings.Compare(a.Name, b.Name) })
	var out []Finding
	for i, a := range sorted {
		for _, b := range sorted[i+1:] {
			for _, ca := range a.CIDRs {
				for _, cb := range b.CIDRs {
					if ca.Overlaps(cb) {
						out = append(out, Finding{Kind: PoolOverlap,
							Words: fmt.Sprintf("pools %s (%s) and %s (%s) overlap: ipamd claims from neither part", a.Name, ca, b.Name, cb)})
					}
				}
			}
		}
	}
	return out
}

// blocksOfGoneNodes finds blocks whose Node is gone or registered again.
func blocksOfGoneNodes(s Snapshot) []Finding {
	uids := map[string]string{}
	for _, n := range s.Nodes {
		uids[n.Name] = n.UID
	}
	var out []Finding
	for _, b := range s.Blocks {
		uid, ok := uids[b.NodeName]
		var words string
		switch {
		case !ok:
			words = fmt.Sprintf("block %s (%s) is claimed by node %s (UID %s), which does not exist", b.Name, b.CIDR, b.NodeName, b.NodeUID)
		case uid != b.NodeUID:
			words = fmt.Sprintf("block %s (%s) is claimed by node %s with UID %s; Node %s now has UID %s (registered again)", b.Name, b.CIDR, b.NodeName, b.NodeUID, b.NodeName, uid)
		default:
			continue
		}
		out = append(out, Finding{Kind: BlockNodeGone, Blocks: []string{b.Name}, Node: b.NodeName, Words: words})
	}
	return out
}

func prefixes(ps []netip.Prefix) string {
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = p.String()
	}
	return orNone(strings.Join(s, ", "))
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
