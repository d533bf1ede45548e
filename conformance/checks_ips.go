package conformance

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/sandboxipam/sandboxipam/conformance/fixture"
	"github.com/sandboxipam/sandboxipam/runtime"
)

// noIPsNote is the report's note for an adapter that reports no pod IPs.
const noIPsNote = "the adapter reports no pod IPs: it passes, but after losing its state ipamd then needs the node's own " +
	"state (host routes and veths, or the sandbox's network namespace) to prove an address free; " +
	"an adapter that reports them lets ipamd rebuild from the runtime alone"

func checkPodIPs(ctx context.Context, s *session) error {
	shared, err := s.sharedPods(ctx)
	if err != nil {
		return err
	}
	stopped, _, err := s.reservedPod(ctx, reservedPodIPs)
	if err != nil {
		return err
	}
	if err := s.stopPod(ctx, stopped); err != nil {
		return err
	}
	pods := append(shared.all(), stopped)
	if !anyTruth(pods) {
		return skipf("pod IPs not supported by the %s fixture: it gives pods no addresses (the docker fixture needs --pod-cidr)", s.fixture.Name())
	}
	list, err := s.list(ctx)
	if err != nil {
		return err
	}
	listed := make([]runtime.Sandbox, len(pods))
	for i, pod := range pods {
		// By exact ID only: IPs listed under a wrong ID are IPs ipamd
		// records under a key no CNI DEL carries.
		sb, err := findForPod(list, pod, "")
		if err != nil {
			return err
		}
		listed[i] = sb
	}
	if !anyReported(listed) {
		s.note("%s", noIPsNote)
		return nil
	}
	owner := ownersOf(pods)
	for i, pod := range pods {
		if err := judgeIPs(pod, listed[i], i == len(pods)-1, owner); err != nil {
			return err
		}
	}
	// GetSandbox of a pod-network pod of each namespace.
	for _, pod := range []fixture.Pod{shared.plain, shared.system} {
		sb, err := s.get(ctx, pod.SandboxID)
		if err != nil {
			return mismatch(fmt.Sprintf("GetSandbox of running pod %s failed", podName(pod.Spec)), "the sandbox", err.Error())
		}
		if err := judgeIPs(pod, sb, false, owner); err != nil {
			return prefixed("GetSandbox", err)
		}
	}
	return nil
}

// judgeIPs requires a running pod-network sandbox to report exactly its
// pod's addresses, family by family, and any other sandbox to report none
// of another pod's. Pods are told apart by sandbox ID, not by name: a pod
// made again under its predecessor's name is another pod.
func judgeIPs(pod fixture.Pod, sb runtime.Sandbox, stopped bool, owner map[netip.Addr]fixture.Pod) error {
	got := sortedIPs(sb.IPs)
	if !stopped && !pod.Spec.HostNetwork {
		return judgeFamilies(pod, sb.ID, got, owner)
	}
	for _, ip := range got {
		if other, ok := owner[ip]; ok && other.SandboxID != pod.SandboxID {
			what := "host-network"
			if stopped {
				what = "stopped"
			}
			return mismatch(fmt.Sprintf("%s sandbox %s of pod %s reports %s, the address of %s", what, pod.SandboxID, podName(pod.Spec), ip, describePod(other)),
				"none of another pod's addresses", formatIPs(got))
		}
	}
	return nil
}

// ipFamilies are the address families, in the order a check compares them.
var ipFamilies = []fixture.IPFamily{fixture.IPv4, fixture.IPv6}

// judgeFamilies compares a running sandbox's reported addresses with what
// the runtime recorded for its pod, one family at a time, and names the
// first family that differs. A missing family is the dual-stack break:
// ipamd, rebuilding from the runtime, would take the pod's address of that
// family for unheld and give it to the next pod.
func judgeFamilies(pod fixture.Pod, id string, got []netip.Addr, owner map[netip.Addr]fixture.Pod) error {
	for _, family := range ipFamilies {
		want, have := fixture.FamilyAddrs(pod.IPs, family), fixture.FamilyAddrs(got, family)
		if slices.Equal(want, have) {
			continue
		}
		subject := fmt.Sprintf("sandbox %s of running %s pod %s", id, fixture.DescribeFamilies(pod.IPs), podName(pod.Spec))
		if len(have) == 0 {
			return mismatch(fmt.Sprintf("%s reports none of the %s addresses the runtime recorded for it: "+
				"ipamd would take them for free after losing its state and give a live pod's address to another", subject, family),
				string(family)+" "+formatIPs(want), string(family)+" "+formatIPs(have)+" (all reported: "+formatIPs(got)+")")
		}
		return mismatch(fmt.Sprintf("%s reports other %s addresses than the runtime recorded for it: "+
			"ipamd would adopt them after losing its state and give a live pod's address away", subject, family),
			string(family)+" "+formatIPs(want), string(family)+" "+formatIPs(have)+describeOwners(have, owner, pod))
	}
	return nil
}

// ownersOf maps each address the runtime recorded to its pod.
func ownersOf(pods []fixture.Pod) map[netip.Addr]fixture.Pod {
	owner := map[netip.Addr]fixture.Pod{}
	for _, pod := range pods {
		for _, ip := range pod.IPs {
			owner[ip] = pod
		}
	}
	return owner
}

// describeOwners names the other pods whose addresses got holds, for a
// failure.
func describeOwners(got []netip.Addr, owner map[netip.Addr]fixture.Pod, self fixture.Pod) string {
	var parts []string
	for _, ip := range got {
		if other, ok := owner[ip]; ok && other.SandboxID != self.SandboxID {
			parts = append(parts, fmt.Sprintf("%s belongs to %s", ip, describePod(other)))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, "; ") + ")"
}

// describePod names a pod for a message about another pod's address; the
// sandbox ID tells two pods of one name apart.
func describePod(pod fixture.Pod) string {
	if pod.SandboxID == "" {
		return "pod " + podName(pod.Spec)
	}
	return fmt.Sprintf("pod %s (sandbox %s)", podName(pod.Spec), pod.SandboxID)
}

func anyTruth(pods []fixture.Pod) bool {
	return slices.ContainsFunc(pods, func(p fixture.Pod) bool { return len(p.IPs) > 0 })
}

func anyReported(list []runtime.Sandbox) bool {
	return slices.ContainsFunc(list, func(sb runtime.Sandbox) bool { return len(sb.IPs) > 0 })
}

// sortedIPs returns ips sorted and without repeats, as fixtures report them.
func sortedIPs(ips []netip.Addr) []netip.Addr {
	out := slices.Clone(ips)
	slices.SortFunc(out, netip.Addr.Compare)
	return slices.Compact(out)
}

func formatIPs(ips []netip.Addr) string {
	if len(ips) == 0 {
		return "no IPs"
	}
	parts := make([]string, len(ips))
	for i, ip := range ips {
		parts[i] = ip.String()
	}
	return "[" + strings.Join(parts, " ") + "]"
}
