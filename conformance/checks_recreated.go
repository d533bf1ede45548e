package conformance

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"

	"github.com/sandboxipam/sandboxipam/conformance/fixture"
	"github.com/sandboxipam/sandboxipam/runtime"
)

// ruleRecreated is what recreated-pod-own-identity verifies. A
// StatefulSet's web-0, deleted and created again, comes back under the
// same namespace and name as another pod: a new UID, attempt 0 and (with
// most IPAMs) a new address. An adapter that remembers pods by namespace
// and name lists the new sandbox with the old pod's UID and address, and
// ipamd would treat a live pod's address as another's.
const ruleRecreated = ruleIdentity + "; " + ruleIPs + ": a pod made again under an earlier pod's namespace and name " +
	"(a StatefulSet's) is another pod, never keyed by its name"

// podInState is a pod of the recreated-pod check and the state its
// sandbox must be listed in.
type podInState struct {
	pod   fixture.Pod
	state runtime.SandboxState
}

// checkRecreated does to one pod what a StatefulSet does to web-0: the
// pod (attempt 1: its sandbox was made again once) runs and is listed,
// then is deleted (its sandbox stopped, still listed NotReady until it is
// removed) and made again under the same namespace and name with a new
// UID, attempt 0. Both are checked while the old sandbox is listed and
// again once it is removed, in the listing and through GetSandbox.
func checkRecreated(ctx context.Context, s *session) error {
	old, oldItem, err := s.reservedPod(ctx, reservedRecreated)
	if err != nil {
		return err
	}
	// The adapter sees the first pod alone first, as ipamd's listings
	// would: an adapter that keeps what it saw by name has it in hand when
	// the name comes back.
	if err := expectOwnIdentities(ctx, s, "before its name was taken again", []podInState{{old, runtime.StateReady}}); err != nil {
		return err
	}
	if err := s.stopPod(ctx, old); err != nil {
		return err
	}
	spec := old.Spec
	spec.UID, spec.Attempt = newUID(), 0
	fresh, _, err := s.createPod(ctx, spec)
	if err != nil {
		return err
	}
	if fresh.SandboxID == old.SandboxID {
		return fmt.Errorf("fixture %s reused sandbox ID %s for a new pod of the same name", s.fixture.Name(), old.SandboxID)
	}
	noteAddresses(s, old, fresh)
	both := []podInState{{old, runtime.StateNotReady}, {fresh, runtime.StateReady}}
	if err := expectOwnIdentities(ctx, s, "while the earlier pod's sandbox was still listed NotReady", both); err != nil {
		return err
	}
	if err := oldItem.Release(ctx); err != nil {
		return fmt.Errorf("fixture %s: %w", s.fixture.Name(), err)
	}
	if err := expectGone(ctx, s, old); err != nil {
		return prefixed("the earlier pod of the name, removed", err)
	}
	return expectOwnIdentities(ctx, s, "after the earlier pod's sandbox was removed", both[1:])
}

// noteAddresses says whether the fixture gave the new pod new addresses;
// where it gave the old ones again, only the UID and attempt tell the two
// pods apart.
func noteAddresses(s *session, old, fresh fixture.Pod) {
	if len(old.IPs) == 0 || len(fresh.IPs) == 0 {
		s.note("the %s fixture gave the pods no addresses to compare: UIDs and attempts tell them apart", s.fixture.Name())
		return
	}
	if slices.ContainsFunc(fresh.IPs, func(ip netip.Addr) bool { return slices.Contains(old.IPs, ip) }) {
		s.note("the runtime gave the new pod %s the old one's address (%s): UIDs and attempts tell them apart", formatIPs(fresh.IPs), formatIPs(old.IPs))
		return
	}
	s.note("old pod %s, new pod %s", formatIPs(old.IPs), formatIPs(fresh.IPs))
}

// expectOwnIdentities lists once and requires each pod listed under its
// own sandbox ID, in its state, with its own identity and addresses; then
// GetSandbox of each must say the same.
func expectOwnIdentities(ctx context.Context, s *session, phase string, pods []podInState) error {
	list, err := s.list(ctx)
	if err != nil {
		return err
	}
	all := make([]fixture.Pod, len(pods))
	for i, p := range pods {
		all[i] = p.pod
	}
	owner := distinctOwners(all)
	// An adapter that reports no pod IPs at all passes pod-ips-match with
	// a note; its addresses are not compared here either.
	if !anyReported(list) {
		owner = nil
	}
	for _, p := range pods {
		sb, err := findForPod(list, p.pod, stateWord(p.state))
		if err != nil {
			return prefixed(phase, err)
		}
		if err := ownIdentity(p, sb, all, owner); err != nil {
			return prefixed(phase+", ListSandboxes", err)
		}
		got, err := s.get(ctx, p.pod.SandboxID)
		if err != nil {
			return mismatch(fmt.Sprintf("%s: GetSandbox of %s sandbox %s failed", phase, stateWord(p.state), p.pod.SandboxID),
				"the sandbox", err.Error())
		}
		if got.ID != p.pod.SandboxID {
			return mismatch(fmt.Sprintf("%s: GetSandbox returned another ID", phase), p.pod.SandboxID, got.ID)
		}
		if err := ownIdentity(p, got, all, owner); err != nil {
			return prefixed(phase+", GetSandbox", err)
		}
	}
	return nil
}

// distinctOwners is ownersOf without the addresses that more than one of
// pods was given: a runtime may give a released address to the next pod,
// and CRI-O still reports it for the stopped sandbox that had it.
func distinctOwners(pods []fixture.Pod) map[netip.Addr]fixture.Pod {
	owner := ownersOf(pods)
	seen := map[netip.Addr]int{}
	for _, pod := range pods {
		for _, ip := range sortedIPs(pod.IPs) {
			if seen[ip]++; seen[ip] > 1 {
				delete(owner, ip)
			}
		}
	}
	return owner
}

// ownIdentity requires sb to carry p's own identity, state and addresses
// (none compared with a nil owner), and names the other pod of the name
// where sb carries its UID.
func ownIdentity(p podInState, sb runtime.Sandbox, all []fixture.Pod, owner map[netip.Addr]fixture.Pod) error {
	if got, want := sandboxIdentity(sb), specIdentity(p.pod.Spec); got != want {
		return mismatch(fmt.Sprintf("sandbox %s of pod %s is reported with another identity%s", sb.ID, podName(p.pod.Spec), borrowedFrom(sb, p.pod, all)),
			want, got)
	}
	if sb.State != p.state {
		return mismatch(fmt.Sprintf("sandbox %s of pod %s is reported in the wrong state", sb.ID, podName(p.pod.Spec)),
			p.state.String(), sb.State.String())
	}
	if owner == nil {
		return nil // the adapter reports no IPs
	}
	return judgeIPs(p.pod, sb, p.state == runtime.StateNotReady, owner)
}

// borrowedFrom explains an identity that is another pod's of the same name.
func borrowedFrom(sb runtime.Sandbox, pod fixture.Pod, all []fixture.Pod) string {
	for _, other := range all {
		if other.SandboxID != pod.SandboxID && sb.UID == other.Spec.UID {
			return fmt.Sprintf(": the UID of the other pod of that namespace and name (sandbox %s). "+
				"The adapter keys pods by namespace and name, which a StatefulSet reuses; ipamd would take one pod's address for the other's",
				other.SandboxID)
		}
	}
	return ""
}

// expectGone requires a removed pod neither listed nor found.
func expectGone(ctx context.Context, s *session, pod fixture.Pod) error {
	list, err := s.list(ctx)
	if err != nil {
		return err
	}
	if sb, ok := stillListed(list, pod); ok {
		return mismatch(fmt.Sprintf("removed sandbox %s is still listed", pod.SandboxID), "not listed", describeListed(sb, true))
	}
	sb, err := s.get(ctx, pod.SandboxID)
	if !errors.Is(err, runtime.ErrNotFound) {
		return mismatch("GetSandbox of a removed sandbox did not report ErrNotFound",
			"an error wrapping runtime.ErrNotFound", describeGet(sb, err))
	}
	return nil
}

// stateWord names a state for a message: running or stopped.
func stateWord(state runtime.SandboxState) string {
	if state == runtime.StateNotReady {
		return "stopped"
	}
	return "running"
}
