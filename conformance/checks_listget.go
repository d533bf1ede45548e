package conformance

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/sandboxipam/sandboxipam/conformance/fixture"
	"github.com/sandboxipam/sandboxipam/runtime"
)

// ruleListGet is what list-get-agree verifies: ipamd trusts both calls, so
// they must tell the same story, down to each family of a dual-stack pod's
// addresses. cri-dockerd lists a sandbox whose pause container is gone as
// NotReady while its PodSandboxStatus answers "No such container": an
// adapter that passes both answers on says "this pod holds its IP" and
// "this pod is gone" in one breath.
const ruleListGet = ruleGet + "; GetSandbox and ListSandboxes agree on every sandbox"

// checkListGetAgree gets every listed ID, Ready and NotReady, and requires
// the same sandbox back: same ID, state, identity and addresses of each
// family. A sandbox of another run may change between the two calls; a
// disagreement counts only when a second listing and a second GetSandbox
// repeat it, and its state is compared only for the run's own pods, which
// nothing else touches: Docker lists a running container that another run
// is force-removing as "removing" while inspecting it says running, for as
// long as the removal takes.
func checkListGetAgree(ctx context.Context, s *session) error {
	stopped, _, err := s.reservedPod(ctx, reservedListGet)
	if err != nil {
		return err
	}
	if err := s.stopPod(ctx, stopped); err != nil {
		return err
	}
	list, err := s.list(ctx)
	if err != nil {
		return err
	}
	if _, err := findForPod(list, stopped, "stopped"); err != nil {
		return err
	}
	own := map[string]bool{}
	for _, pod := range s.created.all() {
		own[pod.SandboxID] = true
	}
	// Side by side: the listing holds every pod on the node.
	if err := forEachParallel(len(list), func(i int) error { return agreeListGet(ctx, s, list[i], own[list[i].ID]) }); err != nil {
		return err
	}
	states := map[runtime.SandboxState]int{}
	for _, listed := range list {
		states[listed.State]++
	}
	s.note("GetSandbox agreed with the listing on all %d sandboxes (%d Ready, %d NotReady)",
		len(list), states[runtime.StateReady], states[runtime.StateNotReady])
	return nil
}

// agreeListGet compares one listed sandbox with GetSandbox of its ID, and
// asks both again before it calls a difference a failure. own says the
// sandbox is one of the run's pods, whose state is compared too.
func agreeListGet(ctx context.Context, s *session, listed runtime.Sandbox, own bool) error {
	got, err := s.get(ctx, listed.ID)
	if !own && err == nil {
		got.State = listed.State // another run's pod may be on its way out
	}
	diff := listGetDiff(listed, got, err)
	if diff == "" {
		return nil
	}
	if same, err := listedUnchanged(ctx, s, listed); err != nil || !same {
		return err // the sandbox changed in between: another run's pod
	}
	got, err = s.get(ctx, listed.ID)
	if !own && err == nil {
		got.State = listed.State
	}
	if diff = listGetDiff(listed, got, err); diff == "" {
		return nil
	}
	// Docker drops a removed container from inspection a moment before
	// it drops it from its listing: a sandbox another run removes can be
	// listed, then not found, listed again and not found again. It is
	// gone from the listing after that second miss; a disagreement of
	// the adapter's own stays.
	if same, err := listedUnchanged(ctx, s, listed); err != nil || !same {
		return err
	}
	want, have := describeListed(listed, true)+" "+sandboxIdentity(listed), describeGet(got, err)
	if err == nil {
		want, have = want+" "+formatIPs(sortedIPs(listed.IPs)), have+" "+formatIPs(sortedIPs(got.IPs))
	}
	return mismatch(fmt.Sprintf("GetSandbox of listed sandbox %s (%s) %s, twice", listed.ID, listed.State, diff), want, have)
}

// listGetDiff says how GetSandbox's answer differs from the listed
// sandbox, or "" when it does not.
func listGetDiff(listed, got runtime.Sandbox, err error) string {
	switch {
	case errors.Is(err, runtime.ErrNotFound):
		return "reported ErrNotFound: ipamd would take a listed pod for gone"
	case err != nil:
		return "failed"
	case got.ID != listed.ID:
		return "returned another ID"
	case got.State != listed.State:
		return "returned another state"
	case sandboxIdentity(got) != sandboxIdentity(listed):
		return "returned another identity"
	}
	if families := differingFamilies(listed.IPs, got.IPs); families != "" {
		// A GetSandbox built on PodSandboxStatus's ip alone, without its
		// additional_ips, drops a dual-stack pod's second family.
		return "returned other " + families + " addresses"
	}
	return ""
}

// differingFamilies names the address families in which a and b differ
// ("IPv6", "IPv4 and IPv6"), or "" when they hold the same addresses.
func differingFamilies(a, b []netip.Addr) string {
	var differ []string
	for _, family := range ipFamilies {
		if !slices.Equal(fixture.FamilyAddrs(a, family), fixture.FamilyAddrs(b, family)) {
			differ = append(differ, string(family))
		}
	}
	return strings.Join(differ, " and ")
}

// listedUnchanged lists again and says whether listed is there unchanged
// (same state, identity and addresses).
func listedUnchanged(ctx context.Context, s *session, listed runtime.Sandbox) (bool, error) {
	relisted, err := s.list(ctx)
	if err != nil {
		return false, err
	}
	again, ok := findByID(relisted, listed.ID)
	return ok && again.State == listed.State && sandboxIdentity(again) == sandboxIdentity(listed) &&
		differingFamilies(again.IPs, listed.IPs) == "", nil
}
