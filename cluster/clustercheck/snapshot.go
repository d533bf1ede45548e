package clustercheck

import (
	"fmt"
	"net/netip"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/sandboxipam/sandboxipam/cluster/api/v1alpha1"
)

// Snapshot is what Compare judges: the cluster's objects, reduced to the
// fields the comparison reads.
type Snapshot struct {
	Pools      []Pool
	Blocks     []Block
	Nodes      []Node
	Pods       []Pod
	Unreadable []Unreadable
	// FromNodes says the nodes' ipamds were asked what they hold: Held is
	// what each answered, Unread the nodes that could not be asked. Without
	// it Compare judges the API's objects alone.
	FromNodes bool
	Held      []Held
	Unread    []NotCompared
}

// Pool is an IPPool's ranges, both families.
type Pool struct {
	Name  string
	CIDRs []netip.Prefix
	// BlockBits is the pool's block size (prefix length) by address
	// length (32, 128); a family absent, or 0, is not judged.
	BlockBits map[int]int
}

// Block is an IPBlock: its CIDR and the Node (name and UID) that claimed it.
type Block struct {
	Name, Pool, NodeName, NodeUID string
	CIDR                          netip.Prefix
}

// Node is a Node's identity and its spec.podCIDRs.
type Node struct {
	Name, UID string
	PodCIDRs  []netip.Prefix
}

// Pod is a Pod's node, phase and status.podIPs.
type Pod struct {
	Namespace, Name, Node string
	Phase                 corev1.PodPhase
	HostNetwork           bool
	IPs                   []netip.Addr
}

// Unreadable is an object the snapshot could not convert, and why.
type Unreadable struct {
	Object, Reason string
}

// Ref is the pod's namespace/name.
func (p Pod) Ref() string { return p.Namespace + "/" + p.Name }

// HoldsAddresses says whether the pod may have a sandbox that holds its
// addresses: not when it has Succeeded or Failed, and a hostNetwork pod's
// address is its node's, never a pod address.
func (p Pod) HoldsAddresses() bool {
	return !p.HostNetwork && p.Phase != corev1.PodSucceeded && p.Phase != corev1.PodFailed
}

// AddNode adds a Node; a podCIDR that does not parse is Unreadable.
func (s *Snapshot) AddNode(n *corev1.Node) {
	node := Node{Name: n.Name, UID: string(n.UID)}
	for i, c := range n.Spec.PodCIDRs {
		p, err := netip.ParsePrefix(c)
		if err != nil {
			s.unreadable("Node "+n.Name, fmt.Sprintf("spec.podCIDRs[%d] %q: %v", i, c, err))
			continue
		}
		node.PodCIDRs = append(node.PodCIDRs, p.Masked())
	}
	s.Nodes = append(s.Nodes, node)
}

// AddPod adds a Pod; an address of status.podIPs that does not parse is
// Unreadable.
func (s *Snapshot) AddPod(p *corev1.Pod) {
	pod := Pod{Namespace: p.Namespace, Name: p.Name, Node: p.Spec.NodeName, Phase: p.Status.Phase, HostNetwork: p.Spec.HostNetwork}
	for i, ip := range p.Status.PodIPs {
		a, err := netip.ParseAddr(ip.IP)
		if err != nil {
			s.unreadable("Pod "+pod.Ref(), fmt.Sprintf("status.podIPs[%d] %q: %v", i, ip.IP, err))
			continue
		}
		pod.IPs = append(pod.IPs, a.Unmap())
	}
	s.Pods = append(s.Pods, pod)
}

// AddBlock adds an IPBlock as the dynamic client returns it; a block whose
// name is not its spec.cidr's canonical name is Unreadable.
func (s *Snapshot) AddBlock(u *unstructured.Unstructured) {
	b, err := v1alpha1.BlockFrom(u)
	if err != nil {
		s.unreadable("IPBlock "+u.GetName(), err.Error())
		return
	}
	p, _ := b.Spec.Prefix() // BlockFrom checked it
	s.Blocks = append(s.Blocks, Block{Name: b.Name, Pool: b.Spec.Pool, NodeName: b.Spec.NodeName, NodeUID: b.Spec.NodeUID, CIDR: p})
}

// AddPool adds an IPPool as the dynamic client returns it; a CIDR that
// does not parse is Unreadable.
func (s *Snapshot) AddPool(u *unstructured.Unstructured) {
	p, err := v1alpha1.PoolFrom(u)
	if err != nil {
		s.unreadable("IPPool "+u.GetName(), err.Error())
		return
	}
	pool := Pool{Name: p.Name}
	for _, f := range p.Spec.Families() {
		// A retiring CIDR is still the pool's while its blocks drain.
		for _, c := range slices.Concat(f.CIDRs, f.RetiringCIDRs) {
			prefix, err := netip.ParsePrefix(c)
			if err != nil {
				s.unreadable("IPPool "+p.Name, fmt.Sprintf("CIDR %q: %v", c, err))
				continue
			}
			pool.CIDRs = append(pool.CIDRs, prefix.Masked())
			if pool.BlockBits == nil {
				pool.BlockBits = map[int]int{}
			}
			pool.BlockBits[prefix.Addr().BitLen()] = f.BlockSize
		}
	}
	s.Pools = append(s.Pools, pool)
}

func (s *Snapshot) unreadable(object, reason string) {
	s.Unreadable = append(s.Unreadable, Unreadable{Object: object, Reason: reason})
}
