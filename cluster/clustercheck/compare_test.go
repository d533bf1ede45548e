package clustercheck_test

import (
	"net/netip"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/sandboxipam/sandboxipam/cluster/clustercheck"
)

func pfx(s ...string) []netip.Prefix {
	out := make([]netip.Prefix, len(s))
	for i, v := range s {
		out[i] = netip.MustParsePrefix(v)
	}
	return out
}

func addrs(s ...string) []netip.Addr {
	out := make([]netip.Addr, len(s))
	for i, v := range s {
		out[i] = netip.MustParseAddr(v)
	}
	return out
}

func block(name, pool, node, uid, cidr string) clustercheck.Block {
	return clustercheck.Block{Name: name, Pool: pool, NodeName: node, NodeUID: uid, CIDR: netip.MustParsePrefix(cidr)}
}

func pod(ns, name, node string, phase corev1.PodPhase, ips ...string) clustercheck.Pod {
	return clustercheck.Pod{Namespace: ns, Name: name, Node: node, Phase: phase, IPs: addrs(ips...)}
}

// healthy is a dual-stack cluster in pool mode where everything agrees:
// two nodes, each with one block per family, and a node-source node.
func healthy() clustercheck.Snapshot {
	return clustercheck.Snapshot{
		Pools: []clustercheck.Pool{{Name: "default", CIDRs: pfx("198.18.0.0/24", "fd00:10::/120")}},
		Blocks: []clustercheck.Block{
			block("198.18.0.0-26", "default", "n1", "uid-1", "198.18.0.0/26"),
			block("198.18.0.64-26", "default", "n2", "uid-2", "198.18.0.64/26"),
			block("fd00-10-0-0-0-0-0-0-122", "default", "n1", "uid-1", "fd00:10::/122"),
		},
		Nodes: []clustercheck.Node{
			{Name: "n1", UID: "uid-1"}, {Name: "n2", UID: "uid-2"},
			{Name: "n3", UID: "uid-3", PodCIDRs: pfx("198.18.9.0/24")},
		},
		Pods: []clustercheck.Pod{
			pod("prod", "web-1", "n1", corev1.PodRunning, "198.18.0.2", "fd00:10::2"),
			pod("prod", "web-2", "n2", corev1.PodRunning, "198.18.0.66"),
			pod("prod", "web-3", "n3", corev1.PodPending, "198.18.9.5"),
			// Done: its status still shows the address a live pod now has.
			pod("batch", "job-1", "n1", corev1.PodSucceeded, "198.18.0.2"),
			pod("batch", "job-2", "n2", corev1.PodFailed, "198.18.7.7"),
			// hostNetwork: the node's own address, shared by design.
			{Namespace: "kube-system", Name: "ipamd-a", Node: "n1", Phase: corev1.PodRunning, HostNetwork: true, IPs: addrs("198.18.100.1")},
			{Namespace: "kube-system", Name: "proxy-a", Node: "n1", Phase: corev1.PodRunning, HostNetwork: true, IPs: addrs("198.18.100.1")},
			// Not yet scheduled or not yet given an address.
			pod("prod", "web-4", "", corev1.PodPending),
		},
	}
}

func TestHealthyClusterHasNoFinding(t *testing.T) {
	r := clustercheck.Compare(healthy())
	if len(r.Findings) != 0 {
		t.Fatalf("findings %+v", r.Findings)
	}
	if r.Pools != 1 || r.Blocks != 3 || r.Nodes != 3 || r.Pods != 8 || r.Addresses != 4 {
		t.Fatalf("counts %+v, want 1 pool, 3 blocks, 3 nodes, 8 pods, 4 held addresses", r)
	}
}

func TestFindings(t *testing.T) {
	cases := []struct {
		name   string
		change func(s *clustercheck.Snapshot)
		want   []clustercheck.Finding
	}{{
		name: "one address on two pods on different nodes",
		change: func(s *clustercheck.Snapshot) {
			s.Blocks = append(s.Blocks, block("198.18.0.128-26", "default", "n2", "uid-2", "198.18.0.128/26"))
			s.Pods = append(s.Pods, pod("dev", "api", "n2", corev1.PodRunning, "198.18.0.130", "fd00:10::2"))
		},
		want: []clustercheck.Finding{
			{Kind: clustercheck.DuplicateAddress, Address: "fd00:10::2", Pods: []string{"dev/api", "prod/web-1"},
				Words: "fd00:10::2 is held by 2 pods: dev/api (node n2), prod/web-1 (node n1)"},
			{Kind: clustercheck.PodOutsideNode, Address: "fd00:10::2", Node: "n2", Pods: []string{"dev/api"},
				Words: "pod dev/api on node n2 holds fd00:10::2, outside its node's blocks (198.18.0.64/26, 198.18.0.128/26) and podCIDRs (none)"},
		},
	}, {
		name: "three pods on one address, one of them pending",
		change: func(s *clustercheck.Snapshot) {
			s.Pods = append(s.Pods, pod("a", "x", "n3", corev1.PodPending, "198.18.9.5"), pod("b", "y", "n3", corev1.PodUnknown, "198.18.9.5"))
		},
		want: []clustercheck.Finding{{Kind: clustercheck.DuplicateAddress, Address: "198.18.9.5", Pods: []string{"a/x", "b/y", "prod/web-3"},
			Words: "198.18.9.5 is held by 3 pods: a/x (node n3), b/y (node n3), prod/web-3 (node n3)"}},
	}, {
		name: "a pod outside its node's podCIDRs (node source)",
		change: func(s *clustercheck.Snapshot) {
			s.Pods = append(s.Pods, pod("prod", "stray", "n3", corev1.PodRunning, "198.18.10.1"))
		},
		want: []clustercheck.Finding{{Kind: clustercheck.PodOutsideNode, Address: "198.18.10.1", Node: "n3", Pods: []string{"prod/stray"},
			Words: "pod prod/stray on node n3 holds 198.18.10.1, outside its node's blocks (none) and podCIDRs (198.18.9.0/24)"}},
	}, {
		name: "a pod in another node's block",
		change: func(s *clustercheck.Snapshot) {
			s.Pods = append(s.Pods, pod("prod", "moved", "n2", corev1.PodRunning, "198.18.0.9"))
		},
		want: []clustercheck.Finding{{Kind: clustercheck.PodOutsideNode, Address: "198.18.0.9", Node: "n2", Pods: []string{"prod/moved"},
			Words: "pod prod/moved on node n2 holds 198.18.0.9, outside its node's blocks (198.18.0.64/26) and podCIDRs (none)"}},
	}, {
		name: "overlapping blocks, nested and of two pools",
		change: func(s *clustercheck.Snapshot) {
			s.Pools = append(s.Pools, clustercheck.Pool{Name: "small", CIDRs: pfx("198.18.0.0/25")})
			s.Blocks = append(s.Blocks, block("198.18.0.96-27", "small", "n1", "uid-1", "198.18.0.96/27"),
				block("198.18.0.112-28", "small", "n1", "uid-1", "198.18.0.112/28"))
		},
		want: []clustercheck.Finding{
			{Kind: clustercheck.BlockOverlap, Blocks: []string{"198.18.0.64-26", "198.18.0.112-28"},
				Words: "blocks 198.18.0.64-26 (198.18.0.64/26, node n2) and 198.18.0.112-28 (198.18.0.112/28, node n1) overlap"},
			{Kind: clustercheck.BlockOverlap, Blocks: []string{"198.18.0.64-26", "198.18.0.96-27"},
				Words: "blocks 198.18.0.64-26 (198.18.0.64/26, node n2) and 198.18.0.96-27 (198.18.0.96/27, node n1) overlap"},
			{Kind: clustercheck.PoolOverlap, Words: "pools default (198.18.0.0/24) and small (198.18.0.0/25) overlap: ipamd claims from neither part"},
		},
	}, {
		// Issue 37: a second pool over the same /24 at /25, and the
		// first pool's block size edited 26 -> 24 under its blocks.
		name: "a second pool over the first, and blocks of another size",
		change: func(s *clustercheck.Snapshot) {
			s.Pools[0].BlockBits = map[int]int{32: 24, 128: 122}
			s.Pools = append(s.Pools, clustercheck.Pool{Name: "second", CIDRs: pfx("198.18.0.0/24"), BlockBits: map[int]int{32: 25}})
		},
		want: []clustercheck.Finding{
			{Kind: clustercheck.PoolOverlap, Words: "pools default (198.18.0.0/24) and second (198.18.0.0/24) overlap: ipamd claims from neither part"},
			{Kind: clustercheck.BlockOutsidePool, Blocks: []string{"198.18.0.0-26"}, Node: "n1",
				Words: "block 198.18.0.0-26 (198.18.0.0/26, node n1) is not of pool default's block size /24"},
			{Kind: clustercheck.BlockOutsidePool, Blocks: []string{"198.18.0.64-26"}, Node: "n2",
				Words: "block 198.18.0.64-26 (198.18.0.64/26, node n2) is not of pool default's block size /24"},
		},
	}, {
		name: "blocks outside their pool, or of no pool",
		change: func(s *clustercheck.Snapshot) {
			s.Blocks = append(s.Blocks, block("198.18.1.0-26", "default", "n1", "uid-1", "198.18.1.0/26"),
				block("fd00-20-0-0-0-0-0-0-122", "default", "n1", "uid-1", "fd00:20::/122"),
				block("198.18.2.0-26", "gone", "n2", "uid-2", "198.18.2.0/26"))
		},
		want: []clustercheck.Finding{
			{Kind: clustercheck.BlockOutsidePool, Blocks: []string{"198.18.1.0-26"}, Node: "n1",
				Words: "block 198.18.1.0-26 (198.18.1.0/26, node n1) lies outside pool default (198.18.0.0/24, fd00:10::/120)"},
			{Kind: clustercheck.BlockOutsidePool, Blocks: []string{"198.18.2.0-26"}, Node: "n2",
				Words: "block 198.18.2.0-26 (198.18.2.0/26, node n2) names pool gone, which does not exist"},
			{Kind: clustercheck.BlockOutsidePool, Blocks: []string{"fd00-20-0-0-0-0-0-0-122"}, Node: "n1",
				Words: "block fd00-20-0-0-0-0-0-0-122 (fd00:20::/122, node n1) lies outside pool default (198.18.0.0/24, fd00:10::/120)"},
		},
	}, {
		name: "a block larger than its pool",
		change: func(s *clustercheck.Snapshot) {
			s.Pools = append(s.Pools, clustercheck.Pool{Name: "tiny", CIDRs: pfx("198.18.4.0/28")})
			s.Blocks = append(s.Blocks, block("198.18.4.0-26", "tiny", "n2", "uid-2", "198.18.4.0/26"))
		},
		want: []clustercheck.Finding{{Kind: clustercheck.BlockOutsidePool, Blocks: []string{"198.18.4.0-26"}, Node: "n2",
			Words: "block 198.18.4.0-26 (198.18.4.0/26, node n2) lies outside pool tiny (198.18.4.0/28)"}},
	}, {
		name: "blocks of a deleted node and of a node registered again",
		change: func(s *clustercheck.Snapshot) {
			s.Nodes = []clustercheck.Node{{Name: "n1", UID: "uid-1b"}, {Name: "n3", UID: "uid-3", PodCIDRs: pfx("198.18.9.0/24")}}
			s.Pods = []clustercheck.Pod{pod("prod", "web-3", "n3", corev1.PodRunning, "198.18.9.5")}
		},
		want: []clustercheck.Finding{
			{Kind: clustercheck.BlockNodeGone, Blocks: []string{"198.18.0.0-26"}, Node: "n1",
				Words: "block 198.18.0.0-26 (198.18.0.0/26) is claimed by node n1 with UID uid-1; Node n1 now has UID uid-1b (registered again)"},
			{Kind: clustercheck.BlockNodeGone, Blocks: []string{"198.18.0.64-26"}, Node: "n2",
				Words: "block 198.18.0.64-26 (198.18.0.64/26) is claimed by node n2 (UID uid-2), which does not exist"},
			{Kind: clustercheck.BlockNodeGone, Blocks: []string{"fd00-10-0-0-0-0-0-0-122"}, Node: "n1",
				Words: "block fd00-10-0-0-0-0-0-0-122 (fd00:10::/122) is claimed by node n1 with UID uid-1; Node n1 now has UID uid-1b (registered again)"},
		},
	}, {
		name: "a pod on an unregistered node",
		change: func(s *clustercheck.Snapshot) {
			s.Pods = append(s.Pods, pod("prod", "orphan", "n9", corev1.PodRunning, "198.18.0.200"))
		},
		want: []clustercheck.Finding{{Kind: clustercheck.PodOutsideNode, Address: "198.18.0.200", Node: "n9", Pods: []string{"prod/orphan"},
			Words: "pod prod/orphan on node n9 holds 198.18.0.200, outside any range of node n9, which is not registered and holds blocks (none)"}},
	}, {
		name: "unreadable objects are findings",
		change: func(s *clustercheck.Snapshot) {
			s.Unreadable = append(s.Unreadable, clustercheck.Unreadable{Object: "IPBlock bad", Reason: "no prefix length"})
		},
		want: []clustercheck.Finding{{Kind: clustercheck.UnreadableObject, Words: "IPBlock bad cannot be read: no prefix length"}},
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := healthy()
			c.change(&s)
			got := clustercheck.Compare(s).Findings
			if !slices.EqualFunc(got, c.want, equalFinding) {
				t.Fatalf("findings:\n%s\nwant:\n%s", dump(got), dump(c.want))
			}
		})
	}
}

func equalFinding(a, b clustercheck.Finding) bool {
	return a.Kind == b.Kind && a.Words == b.Words && a.Address == b.Address && a.Node == b.Node &&
		slices.Equal(a.Blocks, b.Blocks) && slices.Equal(a.Pods, b.Pods)
}

func dump(fs []clustercheck.Finding) string {
	s := ""
	for _, f := range fs {
		s += "  " + string(f.Kind) + " " + f.Words + "\n"
	}
	return s
}

// The report does not depend on the order objects were listed in.
func TestCompareIsOrderIndependent(t *testing.T) {
	s := healthy()
	s.Pods = append(s.Pods, pod("a", "x", "n1", corev1.PodRunning, "198.18.0.66"), pod("b", "y", "n9", corev1.PodRunning, "198.18.0.3"))
	s.Blocks = append(s.Blocks, block("198.18.0.0-25", "default", "n9", "uid-9", "198.18.0.0/25"))
	want := clustercheck.Compare(s)
	slices.Reverse(s.Pods)
	slices.Reverse(s.Blocks)
	slices.Reverse(s.Nodes)
	got := clustercheck.Compare(s)
	if !slices.EqualFunc(got.Findings, want.Findings, equalFinding) || len(want.Findings) != 5 {
		t.Fatalf("reversed input:\n%s\nforward:\n%s", dump(got.Findings), dump(want.Findings))
	}
	if want.Count(clustercheck.DuplicateAddress) != 1 || want.Count(clustercheck.BlockOverlap) != 2 || want.Count(clustercheck.BlockNodeGone) != 1 {
		t.Fatalf("counts: %s", dump(want.Findings))
	}
}
