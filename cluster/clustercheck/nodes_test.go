package clustercheck_test

import (
	"reflect"
	"slices"
	"testing"

	"github.com/sandboxipam/sandboxipam/cluster/clustercheck"
	"github.com/sandboxipam/sandboxipam/ipamd/introspect/schema"
)

// The sandbox IDs of the nodes' assignments in fromNodes.
const (
	sbWeb1 = "a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1"
	sbWeb2 = "b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2"
	sbWeb3 = "c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3"
	sbOld  = "d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4"
)

func heldPods(ps ...schema.Pod) schema.Pods { return schema.Pods{Pods: ps} }

func assignment(id, ns, name string, ips ...string) schema.Pod {
	return schema.Pod{SandboxID: id, Namespace: ns, Name: name, IP: ips[0], IPs: ips}
}

// fromNodes is healthy() with every node's ipamd read, each holding
// exactly its pods' addresses.
func fromNodes() clustercheck.Snapshot {
	s := healthy()
	s.FromNodes = true
	s.AddHeld("n1", "kube-system/sandboxipam-a", heldPods(assignment(sbWeb1, "prod", "web-1", "198.18.0.2", "fd00:10::2")))
	s.AddHeld("n2", "kube-system/sandboxipam-b", heldPods(assignment(sbWeb2, "prod", "web-2", "198.18.0.66")))
	s.AddHeld("n3", "kube-system/sandboxipam-c", heldPods(assignment(sbWeb3, "prod", "web-3", "198.18.9.5")))
	return s
}

func TestNodesHoldingWhatTheAPIShowsAgree(t *testing.T) {
	r := clustercheck.Compare(fromNodes())
	if len(r.Findings) != 0 || len(r.NotCompared) != 0 {
		t.Fatalf("findings %+v, not compared %+v", r.Findings, r.NotCompared)
	}
	if !r.FromNodes || r.NodesRead != 3 || r.HeldAddresses != 4 || r.Addresses != 4 {
		t.Fatalf("counts %+v, want 3 nodes read holding 4 addresses", r)
	}
}

func TestWhatTheNodesHold(t *testing.T) {
	cases := []struct {
		name        string
		change      func(s *clustercheck.Snapshot)
		want        []clustercheck.Finding
		notCompared []clustercheck.NotCompared
	}{{
		// The case the API alone misses: n2's ipamd still holds
		// 198.18.0.2 for a pod whose object is gone, while web-1 on n1
		// has it.
		name: "two nodes' ipamds hold one address",
		change: func(s *clustercheck.Snapshot) {
			s.Held[1].Pods = append(s.Held[1].Pods, clustercheck.HeldPod{SandboxID: sbOld, Namespace: "prod", Name: "old-web", IPs: addrs("198.18.0.2")})
		},
		want: []clustercheck.Finding{
			{Kind: clustercheck.HeldOnTwoNodes, Address: "198.18.0.2", Node: "n1,n2", Pods: []string{"prod/web-1", "prod/old-web"},
				Words: "198.18.0.2 is held by the ipamds of 2 nodes: node n1's ipamd for prod/web-1 (sandbox a1a1a1a1a1a1), node n2's ipamd for prod/old-web (sandbox d4d4d4d4d4d4)"},
			{Kind: clustercheck.HeldOutsideNode, Address: "198.18.0.2", Node: "n2", Pods: []string{"prod/old-web"},
				Words: "node n2's ipamd for prod/old-web (sandbox d4d4d4d4d4d4) holds 198.18.0.2, outside its node's blocks (198.18.0.64/26) and podCIDRs (none): it lies in block 198.18.0.0/26 of node n1"},
		},
	}, {
		// n1's ipamd could not be read: n2's hold on web-1's address is
		// judged against the API's pod, and n1 is named as not compared.
		name: "an ipamd holds what another node's pod has",
		change: func(s *clustercheck.Snapshot) {
			s.Held = slices.Delete(s.Held, 0, 1)
			s.NotRead("n1", "exec in kube-system/sandboxipam-a: container ipamd not running")
			s.Held[0].Pods = append(s.Held[0].Pods, clustercheck.HeldPod{SandboxID: sbOld, Namespace: "prod", Name: "old-web", IPs: addrs("198.18.0.2")})
		},
		want: []clustercheck.Finding{
			{Kind: clustercheck.HeldByAnotherNode, Address: "198.18.0.2", Node: "n2", Pods: []string{"prod/old-web", "prod/web-1"},
				Words: "node n2's ipamd for prod/old-web (sandbox d4d4d4d4d4d4) holds 198.18.0.2, which pod prod/web-1 on node n1 has in the API"},
			{Kind: clustercheck.HeldOutsideNode, Address: "198.18.0.2", Node: "n2", Pods: []string{"prod/old-web"},
				Words: "node n2's ipamd for prod/old-web (sandbox d4d4d4d4d4d4) holds 198.18.0.2, outside its node's blocks (198.18.0.64/26) and podCIDRs (none): it lies in block 198.18.0.0/26 of node n1"},
		},
		notCompared: []clustercheck.NotCompared{{Node: "n1", Reason: "exec in kube-system/sandboxipam-a: container ipamd not running"}},
	}, {
		// A pod's own ipamd holding its address alongside is no finding;
		// a done pod's address held elsewhere is none either.
		name: "an ipamd holds an address outside every block",
		change: func(s *clustercheck.Snapshot) {
			s.Held[2].Pods = append(s.Held[2].Pods, clustercheck.HeldPod{SandboxID: sbOld, Namespace: "batch", Name: "job-2", IPs: addrs("198.18.7.7")})
		},
		want: []clustercheck.Finding{
			{Kind: clustercheck.HeldOutsideNode, Address: "198.18.7.7", Node: "n3", Pods: []string{"batch/job-2"},
				Words: "node n3's ipamd for batch/job-2 (sandbox d4d4d4d4d4d4) holds 198.18.7.7, outside its node's blocks (none) and podCIDRs (198.18.9.0/24)"},
		},
	}, {
		// A node with no blocks and no podCIDRs (the aws or static
		// source) holds what its source gave: nothing to judge it by,
		// unless the address lies in another node's block.
		name: "a node of another source",
		change: func(s *clustercheck.Snapshot) {
			s.Nodes[2].PodCIDRs = nil
			s.Held[2].Pods = append(s.Held[2].Pods, clustercheck.HeldPod{SandboxID: sbOld, Namespace: "batch", Name: "job-2", IPs: addrs("198.51.100.7")})
		},
	}, {
		name: "a node of another source holding another node's block",
		change: func(s *clustercheck.Snapshot) {
			s.Nodes[2].PodCIDRs = nil
			s.Held[2].Pods = append(s.Held[2].Pods, clustercheck.HeldPod{SandboxID: sbOld, Namespace: "batch", Name: "job-2", IPs: addrs("198.18.0.70")})
		},
		want: []clustercheck.Finding{
			{Kind: clustercheck.HeldOutsideNode, Address: "198.18.0.70", Node: "n3", Pods: []string{"batch/job-2"},
				Words: "node n3's ipamd for batch/job-2 (sandbox d4d4d4d4d4d4) holds 198.18.0.70, outside its node's blocks (none) and podCIDRs (none): it lies in block 198.18.0.64/26 of node n2"},
		},
	}, {
		// The partition: n1's Node deleted, its ipamd out of reach. Its
		// blocks are named; the API-side finding says the Node is gone.
		name: "a node whose Node is gone",
		change: func(s *clustercheck.Snapshot) {
			s.Nodes = slices.Delete(s.Nodes, 0, 1)
			s.Held = slices.Delete(s.Held, 0, 1)
			s.Pods = slices.Delete(s.Pods, 0, 1)
		},
		want: []clustercheck.Finding{
			{Kind: clustercheck.BlockNodeGone, Blocks: []string{"198.18.0.0-26"}, Node: "n1",
				Words: "block 198.18.0.0-26 (198.18.0.0/26) is claimed by node n1 (UID uid-1), which does not exist"},
			{Kind: clustercheck.BlockNodeGone, Blocks: []string{"fd00-10-0-0-0-0-0-0-122"}, Node: "n1",
				Words: "block fd00-10-0-0-0-0-0-0-122 (fd00:10::/122) is claimed by node n1 (UID uid-1), which does not exist"},
		},
		notCompared: []clustercheck.NotCompared{{Node: "n1", Reason: "its Node is gone from the API, so its ipamd cannot be reached through the API server; " +
			"if the machine still runs (cut off from the API server alone), its pods may still hold addresses of its blocks (198.18.0.0/26, fd00:10::/122): ask it on the node (ipamctl check, ipamctl pods)"}},
	}, {
		name:        "a Node with no ipamd read",
		change:      func(s *clustercheck.Snapshot) { s.Held = slices.Delete(s.Held, 2, 3) },
		notCompared: []clustercheck.NotCompared{{Node: "n3", Reason: "no ipamd was read on it"}},
	}, {
		// Without FromNodes what the nodes hold is not judged, and no
		// node is listed as not compared.
		name: "node reads off",
		change: func(s *clustercheck.Snapshot) {
			s.FromNodes = false
			s.Held[1].Pods = append(s.Held[1].Pods, clustercheck.HeldPod{SandboxID: sbOld, Namespace: "prod", Name: "old-web", IPs: addrs("198.18.0.2")})
		},
	}, {
		name: "an address an ipamd reports that does not parse",
		change: func(s *clustercheck.Snapshot) {
			s.AddHeld("n3", "kube-system/sandboxipam-c2", heldPods(assignment(sbOld, "prod", "odd", "198.18.9.300")))
		},
		want: []clustercheck.Finding{
			{Kind: clustercheck.UnreadableObject,
				Words: `ipamd of node n3 cannot be read: prod/odd (sandbox d4d4d4d4d4d4) holds "198.18.9.300": ParseAddr("198.18.9.300"): IPv4 field has value >255`},
		},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := fromNodes()
			tc.change(&s)
			r := clustercheck.Compare(s)
			if !reflect.DeepEqual(r.Findings, tc.want) && (len(r.Findings) != 0 || len(tc.want) != 0) {
				t.Errorf("findings\n%+v\nwant\n%+v", r.Findings, tc.want)
			}
			if !reflect.DeepEqual(r.NotCompared, tc.notCompared) {
				t.Errorf("not compared %+v, want %+v", r.NotCompared, tc.notCompared)
			}
		})
	}
}
