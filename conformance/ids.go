package conformance

import (
	"fmt"
	"slices"
	"strings"

	"github.com/sandboxipam/sandboxipam/conformance/fixture"
	"github.com/sandboxipam/sandboxipam/runtime"
)

// shortIDLength is the length of Docker's and crictl's short ID form.
const shortIDLength = 12

// maxIDsShown caps how many listed IDs a failure message quotes.
const maxIDsShown = 8

// findByID returns the listed sandbox whose ID is exactly id.
func findByID(list []runtime.Sandbox, id string) (runtime.Sandbox, bool) {
	for _, sb := range list {
		if sb.ID == id {
			return sb, true
		}
	}
	return runtime.Sandbox{}, false
}

// findForPod returns the listed sandbox of pod: by exact ID, or else by pod
// UID and attempt. The fallback lets checks about state and identity judge
// those properties even for an adapter that gets the ID wrong; the ID
// checks report the ID itself.
func findForPod(list []runtime.Sandbox, pod fixture.Pod) (runtime.Sandbox, bool) {
	if sb, ok := findByID(list, pod.SandboxID); ok {
		return sb, true
	}
	for _, sb := range list {
		if sb.UID == pod.Spec.UID && sb.Attempt == pod.Spec.Attempt {
			return sb, true
		}
	}
	return runtime.Sandbox{}, false
}

// stripScheme removes a "docker://"-style prefix.
func stripScheme(id string) string {
	if i := strings.Index(id, "://"); i >= 0 {
		return id[i+len("://"):]
	}
	return id
}

// refersTo reports whether listed names the container with full ID target,
// in any of the forms a broken adapter might use: exact, with a scheme, or
// a short prefix.
func refersTo(listed, target string) bool {
	bare := stripScheme(listed)
	if bare == "" || target == "" {
		return false
	}
	if bare == target {
		return true
	}
	return len(bare) >= shortIDLength && len(bare) < len(target) && strings.HasPrefix(target, bare)
}

// appContainerOf returns the app container of pods that listed refers to.
func appContainerOf(listed string, pods []fixture.Pod) (appID string, pod fixture.Pod, ok bool) {
	for _, p := range pods {
		for _, id := range p.ContainerIDs {
			if refersTo(listed, id) {
				return id, p, true
			}
		}
	}
	return "", fixture.Pod{}, false
}

// diagnoseID explains why listed is not the sandbox ID truth of pod.
func diagnoseID(truth, listed string, pod fixture.Pod) string {
	if appID, _, ok := appContainerOf(listed, []fixture.Pod{pod}); ok {
		return fmt.Sprintf("listed the ID of application container %s instead of the infra sandbox ID: "+
			"this is the seed bug (ipamd records the IP under an ID that no CNI DEL ever carries, so the IP leaks)", appID)
	}
	bare := stripScheme(listed)
	switch {
	case bare != listed && bare == truth:
		return fmt.Sprintf("listed with the scheme prefix %q; the CNI plugin receives the bare ID",
			strings.TrimSuffix(listed, bare))
	case len(bare) == shortIDLength && strings.HasPrefix(truth, bare):
		return "listed ID looks like a short ID (12 characters); the CNI plugin receives the full-length ID"
	case len(bare) < len(truth) && strings.HasPrefix(truth, bare):
		return fmt.Sprintf("listed ID is truncated to %d of %d characters", len(bare), len(truth))
	case strings.EqualFold(bare, truth):
		return "listed ID differs from the sandbox ID in letter case; IDs are compared byte for byte"
	default:
		return "listed ID is not the pod's infra sandbox ID"
	}
}

// listedIDs formats the IDs of list for a failure message.
func listedIDs(list []runtime.Sandbox) string {
	ids := make([]string, 0, len(list))
	for _, sb := range list {
		ids = append(ids, sb.ID)
	}
	slices.Sort(ids)
	if len(ids) > maxIDsShown {
		return fmt.Sprintf("%d sandboxes: %s, ...", len(ids), strings.Join(ids[:maxIDsShown], ", "))
	}
	return fmt.Sprintf("%d sandboxes: [%s]", len(ids), strings.Join(ids, ", "))
}

// identity formats a pod's identity for comparison.
func identity(name, namespace, uid string, attempt uint32) string {
	return fmt.Sprintf("name=%q namespace=%q uid=%q attempt=%d", name, namespace, uid, attempt)
}

// specIdentity is identity for a fixture pod.
func specIdentity(spec fixture.PodSpec) string {
	return identity(spec.Name, spec.Namespace, spec.UID, spec.Attempt)
}

// sandboxIdentity is identity for a listed sandbox.
func sandboxIdentity(sb runtime.Sandbox) string {
	return identity(sb.Name, sb.Namespace, sb.UID, sb.Attempt)
}

// describeSpec names the kind of pod a spec asks for, for skip reasons.
func describeSpec(spec fixture.PodSpec) string {
	if spec.HostNetwork {
		return "host-network pods"
	}
	return "pods"
}
