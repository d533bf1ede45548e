package clustercheck_test

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/sandboxipam/sandboxipam/cluster/clustercheck"
)

func unstructuredBlock(name, cidr string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "sandboxipam.io/v1alpha1", "kind": "IPBlock", "metadata": map[string]any{"name": name},
		"spec": map[string]any{"pool": "default", "cidr": cidr, "nodeName": "n1", "nodeUID": "uid-1", "claimedAt": "2026-12-03T10:00:00Z"},
	}}
}

// The converters keep what they can read and name what they cannot.
func TestSnapshotAddsAndNamesTheUnreadable(t *testing.T) {
	var s clustercheck.Snapshot
	s.AddBlock(unstructuredBlock("198.18.0.64-26", "198.18.0.64/26"))
	s.AddBlock(unstructuredBlock("my-block", "198.18.0.128/26"))
	s.AddPool(&unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{"name": "default"},
		"spec": map[string]any{"ipv4": map[string]any{"cidrs": []any{"198.18.0.0/24", "nope"}}}}})
	s.AddNode(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", UID: "uid-1"}, Spec: corev1.NodeSpec{PodCIDRs: []string{"198.18.9.0/24", "x"}}})
	s.AddPod(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "prod", Name: "web"}, Spec: corev1.PodSpec{NodeName: "n1"},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIPs: []corev1.PodIP{{IP: "198.18.0.70"}, {IP: "::ffff:198.18.0.71"}, {IP: "bad"}}}})
	if len(s.Blocks) != 1 || s.Blocks[0].Name != "198.18.0.64-26" || s.Blocks[0].CIDR.String() != "198.18.0.64/26" || s.Blocks[0].NodeUID != "uid-1" {
		t.Errorf("blocks %+v", s.Blocks)
	}
	if len(s.Pools) != 1 || len(s.Pools[0].CIDRs) != 1 || s.Pools[0].CIDRs[0].String() != "198.18.0.0/24" {
		t.Errorf("pools %+v", s.Pools)
	}
	if len(s.Nodes) != 1 || len(s.Nodes[0].PodCIDRs) != 1 || s.Nodes[0].UID != "uid-1" {
		t.Errorf("nodes %+v", s.Nodes)
	}
	if len(s.Pods) != 1 || !slices.Equal(s.Pods[0].IPs, addrs("198.18.0.70", "198.18.0.71")) || s.Pods[0].Node != "n1" {
		t.Errorf("pods %+v", s.Pods)
	}
	var objects []string
	for _, u := range s.Unreadable {
		objects = append(objects, u.Object)
	}
	if !slices.Equal(objects, []string{"IPBlock my-block", "IPPool default", "Node n1", "Pod prod/web"}) {
		t.Errorf("unreadable %+v", s.Unreadable)
	}
	if r := clustercheck.Compare(s); r.Count(clustercheck.UnreadableObject) != 4 {
		t.Errorf("report %+v", r.Findings)
	}
}

// FuzzCompare feeds the converters and the comparison whatever the API
// server could hold: nothing panics, and every finding has words.
func FuzzCompare(f *testing.F) {
	f.Add("198.18.0.64-26", "198.18.0.64/26", "198.18.0.0/24", "198.18.0.70", "198.18.9.0/24", "n1")
	f.Add("fd00-0-0-0-0-0-0-40-122", "fd00::40/122", "fd00::/64", "fd00::41", "", "")
	f.Add("x", "::/0", "0.0.0.0/0", "::ffff:1.2.3.4", "1.2.3.4/32", "n2")
	f.Fuzz(func(t *testing.T, name, cidr, poolCIDR, podIP, podCIDR, node string) {
		var s clustercheck.Snapshot
		s.AddBlock(unstructuredBlock(name, cidr))
		s.AddBlock(unstructuredBlock(name, poolCIDR))
		s.AddPool(&unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{"name": "default"},
			"spec": map[string]any{"ipv4": map[string]any{"cidrs": []any{poolCIDR}}, "ipv6": map[string]any{"cidrs": []any{cidr}}}}})
		s.AddNode(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node, UID: "u"}, Spec: corev1.NodeSpec{PodCIDRs: []string{podCIDR}}})
		for _, n := range []string{"a", "b"} {
			s.AddPod(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: n}, Spec: corev1.PodSpec{NodeName: node},
				Status: corev1.PodStatus{PodIPs: []corev1.PodIP{{IP: podIP}}}})
		}
		for _, fd := range clustercheck.Compare(s).Findings {
			if fd.Words == "" || fd.Kind == "" {
				t.Fatalf("finding without words: %+v", fd)
			}
		}
	})
}
