package reclaim

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/sandboxipam/sandboxipam/cluster/api/ipamdlease"
	"github.com/sandboxipam/sandboxipam/cluster/api/v1alpha1"
)

// Pass is what one reclaim pass decided and did.
type Pass struct {
	At time.Time `json:"at"`
	// Decisions are the verdicts on every block, in name order.
	Decisions []Decision `json:"decisions"`
	// Reclaimed are the blocks deleted, in name order.
	Reclaimed []string `json:"reclaimed"`
	// Returned are the nodes ("name (UID uid)") whose blocks were
	// reclaimed and whose ipamd answered again as that node this pass
	// (returned.go), each reported once.
	Returned []string `json:"returned,omitempty"`
	// Errors are what went wrong; a block is never reclaimed on an error.
	Errors []string `json:"errors"`
}

// Decision is the verdict on one block.
type Decision struct {
	Block string `json:"block"`
	CIDR  string `json:"cidr"`
	Node  string `json:"node"`
	// NodeGone: condition (a) holds, whatever the verdict.
	NodeGone bool `json:"nodeGone"`
	// LeaseExpired: condition (b) holds, whatever the verdict.
	LeaseExpired bool `json:"leaseExpired"`
	// IpamdStopped: condition (d) holds, whatever the verdict: the
	// node's ipamd Lease has not changed for longer than the grace.
	IpamdStopped bool `json:"ipamdStopped"`
	// NodeDead: condition (e) holds, whatever the verdict: the node's
	// ipamd has been silent on the data plane for longer than the grace,
	// or an operator confirmed the node gone.
	NodeDead bool `json:"nodeDead"`
	// Pods are the pods ("namespace/name address") with an address in
	// the block: while there is one, condition (c) fails.
	Pods []string `json:"pods,omitempty"`
	Verdict
}

// Verdict returns the decision on block, and whether there was one.
func (p Pass) Verdict(block string) (Verdict, bool) {
	for _, d := range p.Decisions {
		if d.Block == block {
			return d.Verdict, true
		}
	}
	return Verdict{}, false
}

// podAddr is one address a pod holds.
type podAddr struct {
	pod  string
	addr netip.Addr
}

// candidate is a block the caches say may be reclaimed.
type candidate struct {
	block v1alpha1.IPBlock
	cidr  netip.Prefix
}

// RunOnce judges every block on the caches, confirms the reclaimable ones
// with fresh reads, and deletes those still reclaimable.
func (r *Reclaimer) RunOnce(ctx context.Context) Pass {
	p := Pass{At: r.clock.Now()}
	objs, err := r.blocks.List(labels.Everything())
	if err != nil {
		p.Errors = append(p.Errors, fmt.Sprintf("list IPBlocks from the cache: %v", err))
		return r.finish(p)
	}
	addrs, err := r.cachedPodAddrs()
	if err != nil {
		p.Errors = append(p.Errors, err.Error())
		return r.finish(p)
	}
	var candidates []candidate
	pools := r.poolsByName()
	r.probeAlive(ctx, objs)
	p.Returned = r.probeReturned(ctx)
	for _, obj := range objs {
		b, err := v1alpha1.BlockFrom(obj.(*unstructured.Unstructured))
		if err != nil {
			p.Errors = append(p.Errors, err.Error())
			continue
		}
		// Only a block of a known pool at its size is judged: any other
		// was written by someone it should not have been (issue 37), and
		// is reported each pass, never reclaimed.
		if err := v1alpha1.CheckBlock(b, pools); err != nil {
			p.Errors = append(p.Errors, err.Error()+": never reclaimed")
			continue
		}
		cidr, _ := b.Spec.Prefix() // BlockFrom checked it
		d := decide(b, r.cachedInput(b, cidr, addrs, p.At))
		p.Decisions = append(p.Decisions, d)
		if d.Reclaim {
			candidates = append(candidates, candidate{block: b, cidr: cidr})
		}
	}
	r.forgetLeases(objs)
	if len(candidates) > 0 {
		r.confirmAndReclaim(ctx, candidates, &p)
	}
	slices.SortFunc(p.Decisions, func(a, b Decision) int { return strings.Compare(a.Block, b.Block) })
	slices.Sort(p.Reclaimed)
	return r.finish(p)
}

func (r *Reclaimer) finish(p Pass) Pass {
	waiting := 0
	for _, d := range p.Decisions {
		if d.NodeGone && !d.Reclaim {
			waiting++
		}
	}
	r.metrics.observePass(p, waiting)
	r.last.Store(&p)
	return p
}

// decide is the decision on b from in: the verdict, and each condition as
// in shows it. The confirmation replaces a candidate's with one from fresh
// reads, so that the conditions it shows are the ones its verdict read.
func decide(b v1alpha1.IPBlock, in Input) Decision {
	_, gone := nodeGone(in)
	_, expired := leaseExpired(in)
	_, stopped := ipamdStopped(in)
	_, dead := nodeDead(in)
	return Decision{Block: b.Name, CIDR: b.Spec.CIDR, Node: b.Spec.NodeName,
		NodeGone: gone, LeaseExpired: expired, IpamdStopped: stopped, NodeDead: dead, Pods: in.Pods, Verdict: Decide(in)}
}

// cachedInput is Decide's input for b from the caches.
func (r *Reclaimer) cachedInput(b v1alpha1.IPBlock, cidr netip.Prefix, addrs []podAddr, now time.Time) Input {
	in := r.input(b, now)
	if n, err := r.nodes.Get(b.Spec.NodeName); err == nil {
		in.NodeExists, in.NodeUID = true, string(n.UID)
	}
	l, err := r.nodeLeases.Get(b.Spec.NodeName)
	if err != nil {
		l = nil
	}
	in.Lease = r.leases.observe(b.Spec.NodeName, l)
	il, err := r.ipamdLeases.Get(ipamdlease.IpamdLeaseName(b.Spec.NodeName))
	if err != nil {
		il = nil
	}
	in.Ipamd = r.ipamdSeen.observe(ipamdlease.IpamdLeaseName(b.Spec.NodeName), il)
	in.Pods = podsIn(cidr, addrs)
	return in
}

func (r *Reclaimer) input(b v1alpha1.IPBlock, now time.Time) Input {
	return Input{Block: b.Name, BlockCIDR: b.Spec.CIDR, BlockNodeName: b.Spec.NodeName, BlockNodeUID: b.Spec.NodeUID, Now: now, Grace: r.cfg.Grace,
		IpamdLease: r.cfg.IpamdLeaseNamespace + "/" + ipamdlease.IpamdLeaseName(b.Spec.NodeName), Alive: r.alive.seenFor(b)}
}

func (r *Reclaimer) cachedPodAddrs() ([]podAddr, error) {
	pods, err := r.pods.List(labels.Everything())
	if err != nil {
		return nil, fmt.Errorf("list Pods from the cache: %w", err)
	}
	var out []podAddr
	for _, p := range pods {
		out = appendPodAddrs(out, p)
	}
	return out, nil
}

// appendPodAddrs adds every address of p's status.podIPs. An address that
// does not parse cannot be placed, so it is kept as invalid and counts as
// inside every block: it blocks reclaims rather than being ignored.
func appendPodAddrs(out []podAddr, p *corev1.Pod) []podAddr {
	for _, ip := range p.Status.PodIPs {
		a, _ := netip.ParseAddr(ip.IP)
		out = append(out, podAddr{pod: p.Namespace + "/" + p.Name + " " + ip.IP, addr: a.Unmap()})
	}
	return out
}

func podsIn(cidr netip.Prefix, addrs []podAddr) []string {
	var out []string
	for _, a := range addrs {
		if !a.addr.IsValid() || cidr.Contains(a.addr) {
			out = append(out, a.pod)
		}
	}
	slices.Sort(out)
	return out
}
