package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/sandboxipam/sandboxipam/internal/testsupport"
	introspect "github.com/sandboxipam/sandboxipam/ipamd/introspect/schema"
)

// clusterPod is one pod of the Deployment on which the API server, its
// node's runtime and its node's ipamd agree.
type clusterPod struct {
	Name, Node, SandboxID string
	IPs                   []string // sorted
	PID                   int      // the sandbox's pause process
}

// clusterState is what the cluster agreed on at one moment.
type clusterState struct {
	pods  map[string]clusterPod
	nodes map[string]nodeInfo
}

// onNode lists the names of the pods on node, sorted.
func (s clusterState) onNode(node string) []string {
	var names []string
	for _, p := range s.pods {
		if p.Node == node {
			names = append(names, p.Name)
		}
	}
	slices.Sort(names)
	return names
}

// rangeCheck says whether a pod's addresses may lie where they do.
type rangeCheck func(p clusterPod, node nodeInfo) error

// inNodeCIDRs: one address per family, each in the node's podCIDRs.
func inNodeCIDRs(p clusterPod, node nodeInfo) error {
	if len(p.IPs) != 2 {
		return fmt.Errorf("pod %s has addresses %v, want one per family", p.Name, p.IPs)
	}
	for _, s := range p.IPs {
		ip, err := netip.ParseAddr(s)
		if err != nil {
			return fmt.Errorf("pod %s: %w", p.Name, err)
		}
		if !slices.ContainsFunc(node.CIDRs, func(c netip.Prefix) bool { return c.Contains(ip) }) {
			return fmt.Errorf("pod %s on %s has %s, outside the node's podCIDRs %v", p.Name, p.Node, ip, node.CIDRs)
		}
	}
	return nil
}

// waitAgree waits until the Deployment has exactly want pods, all running
// and ready, and for every node the API server's pods, the runtime's ready
// sandboxes and ipamd's assignments (ipamctl pods) are the same pods with
// the same addresses, under the sandbox IDs the runtime gave them, each
// address where check allows it. An address held by two sandboxes
// anywhere in the cluster fails the test at once.
func (c *cluster) waitAgree(t *testing.T, want int, check rangeCheck) clusterState {
	t.Helper()
	var state clusterState
	testsupport.WaitFor(t, 5*time.Minute, fmt.Sprintf("%d %s pods run and the API server, runtimes and ipamds agree", want, webName), func(ctx context.Context) error {
		var err error
		state, err = c.agree(ctx, t, want, check)
		return err
	})
	return state
}

func (c *cluster) agree(ctx context.Context, t *testing.T, want int, check rangeCheck) (clusterState, error) {
	state := clusterState{pods: map[string]clusterPod{}, nodes: map[string]nodeInfo{}}
	apiPods, err := c.webPods(ctx)
	if err != nil {
		return state, err
	}
	if len(apiPods) != want {
		return state, fmt.Errorf("%d %s pods running, want %d", len(apiPods), webName, want)
	}
	holder := map[string]string{} // address -> node/sandbox
	for _, n := range c.live() {
		info, err := c.getNode(ctx, n.name)
		if err != nil {
			return state, err
		}
		state.nodes[n.name] = info
		pods, err := n.agree(ctx, apiPods)
		if err != nil {
			return state, fmt.Errorf("%s: %w", n.name, err)
		}
		for _, p := range pods {
			for _, ip := range p.IPs {
				if other, dup := holder[ip]; dup {
					t.Fatalf("address %s held by two pods: %s and %s/%s", ip, other, n.name, p.SandboxID)
				}
				holder[ip] = n.name + "/" + p.SandboxID
			}
			if err := check(p, info); err != nil {
				return state, err
			}
			state.pods[p.Name] = p
		}
	}
	if len(state.pods) != want {
		return state, fmt.Errorf("the nodes run %d of the %d pods", len(state.pods), want)
	}
	return state, nil
}

// webPods are the Deployment's pods as the API server reports them, by
// name: running, ready and addressed, none terminating, else an error.
func (c *cluster) webPods(ctx context.Context) (map[string]corev1.Pod, error) {
	var list corev1.PodList
	if err := c.api.get(ctx, "/api/v1/namespaces/default/pods?labelSelector="+url.QueryEscape("app="+webName), &list); err != nil {
		return nil, err
	}
	pods := map[string]corev1.Pod{}
	var notYet []string
	for _, p := range list.Items {
		if p.DeletionTimestamp != nil || p.Status.Phase != corev1.PodRunning || !podReady(&p) || len(p.Status.PodIPs) == 0 {
			notYet = append(notYet, p.Name+" "+string(p.Status.Phase))
			continue
		}
		pods[p.Name] = p
	}
	if len(notYet) > 0 {
		return nil, fmt.Errorf("not yet running: %v", notYet)
	}
	return pods, nil
}

// agree compares node n's ready sandboxes and ipamd's assignments with
// the API server's pods bound to n.
func (n *clusterNode) agree(ctx context.Context, apiPods map[string]corev1.Pod) ([]clusterPod, error) {
	sandboxes, err := n.cri.pods(ctx)
	if err != nil {
		return nil, err
	}
	byName := map[string]criPod{}
	for _, s := range sandboxes {
		if s.State == "SANDBOX_READY" && s.Namespace == "default" {
			if _, dup := byName[s.Name]; dup {
				return nil, fmt.Errorf("two ready sandboxes for %s", s.Name)
			}
			byName[s.Name] = s
		}
	}
	var pods []clusterPod
	for name, p := range apiPods {
		if p.Spec.NodeName != n.name {
			continue
		}
		s, ok := byName[name]
		if !ok {
			return nil, fmt.Errorf("no ready sandbox for pod %s", name)
		}
		var apiIPs []string
		for _, ip := range p.Status.PodIPs {
			apiIPs = append(apiIPs, ip.IP)
		}
		if !sameSet(apiIPs, s.IPs) {
			return nil, fmt.Errorf("pod %s: API says %v, runtime %v", name, apiIPs, s.IPs)
		}
		pods = append(pods, clusterPod{Name: name, Node: n.name, SandboxID: s.ID, IPs: sorted(s.IPs), PID: s.PID})
		delete(byName, name)
	}
	if len(byName) > 0 {
		return nil, fmt.Errorf("ready sandboxes without a pod in the API: %v", keys(byName))
	}
	return pods, n.ipamdHolds(ctx, pods)
}

// ipamdHolds compares ipamctl pods on node n with pods, exactly.
func (n *clusterNode) ipamdHolds(ctx context.Context, pods []clusterPod) error {
	held, err := n.ipamdPods(ctx)
	if err != nil {
		return err
	}
	var got, want []string
	for _, h := range held {
		got = append(got, h.SandboxID+" "+h.Namespace+"/"+h.Name+" "+strings.Join(sorted(h.addrs()), ","))
	}
	for _, p := range pods {
		want = append(want, p.SandboxID+" default/"+p.Name+" "+strings.Join(p.IPs, ","))
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		return fmt.Errorf("%w: ipamctl pods:\n  %s\nAPI server and runtime:\n  %s", errDisagree, strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
	return nil
}

// ipamdPods runs "ipamctl pods" in node n's running ipamd.
func (n *clusterNode) ipamdPods(ctx context.Context) ([]ipamPod, error) {
	id, _, err := n.cri.runningContainer(ctx, "ipamd")
	if err != nil {
		return nil, err
	}
	return ipamctlPods(ctx, n.cri, id)
}

// addrs are every address of the assignment (IPs, else IP).
func (p ipamPod) addrs() []string {
	if len(p.IPs) == 0 {
		return []string{p.IP}
	}
	return p.IPs
}

// errDisagree: ipamd answered, and holds other than the runtime runs.
var errDisagree = errors.New("ipamd and the runtime disagree")

// pool runs "ipamctl -o json pool" on node n.
func (n *clusterNode) pool(ctx context.Context) (introspect.Pool, error) {
	return ipamctlPool(ctx, n.cri)
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

func sameSet(a, b []string) bool { return slices.Equal(sorted(a), sorted(b)) }

func keys[V any](m map[string]V) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}
