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

// findForPod returns pod's listed sandbox, found by its exact sandbox ID
// and by nothing else: an adapter that lists the pod under any other ID
// fails every check that looks for the pod. what names the pod's state for
// the message ("running", "stopped"); the entry the adapter listed instead
// (see misfiled) only shapes the message.
func findForPod(list []runtime.Sandbox, pod fixture.Pod, what string) (runtime.Sandbox, error) {
	if sb, ok := findByID(list, pod.SandboxID); ok {
		return sb, nil
	}
	return runtime.Sandbox{}, notListed(list, pod, what)
}

// notListed explains why pod is not listed under its sandbox ID.
func notListed(list []runtime.Sandbox, pod fixture.Pod, what string) *Failure {
	label := strings.TrimSpace(fmt.Sprintf("%s pod %s (attempt %d, %s)", what, podName(pod.Spec),
		pod.Spec.Attempt, appContainerCount(len(pod.Spec.Containers))))
	if sb, ok := misfiled(list, pod); ok {
		return mismatch(fmt.Sprintf("%s is not listed under its sandbox ID: %s", label, diagnoseID(pod.SandboxID, sb.ID, pod)),
			pod.SandboxID, sb.ID)
	}
	return mismatch(label+" is not listed, under its sandbox ID or any other", pod.SandboxID, listedIDs(list))
}

// misfiled returns the entry under which a broken adapter lists pod instead
// of its sandbox ID: one whose ID names the pod's sandbox or one of its app
// containers in another form, else one with the pod's UID and attempt. It
// never makes a check pass; it says what went wrong.
func misfiled(list []runtime.Sandbox, pod fixture.Pod) (runtime.Sandbox, bool) {
	for _, sb := range list {
		if sb.ID == pod.SandboxID {
			continue
		}
		if _, _, ok := appContainerOf(sb.ID, []fixture.Pod{pod}); ok || refersTo(sb.ID, pod.SandboxID) {
			return sb, true
		}
	}
	for _, sb := range list {
		if sb.ID != pod.SandboxID && sb.UID == pod.Spec.UID && sb.Attempt == pod.Spec.Attempt && pod.Spec.UID != "" {
			return sb, true
		}
	}
	return runtime.Sandbox{}, false
}

// stillListed reports an entry for pod under its sandbox ID or, for the
// checks that require a pod gone, under any other ID that names it.
func stillListed(list []runtime.Sandbox, pod fixture.Pod) (runtime.Sandbox, bool) {
	if sb, ok := findByID(list, pod.SandboxID); ok {
		return sb, true
	}
	return misfiled(list, pod)
}

// podName names a pod for a message: namespace/name, or its name alone
// where it has no namespace. The suite's pods live in two namespaces.
func podName(spec fixture.PodSpec) string {
	if spec.Namespace == "" {
		return spec.Name
	}
	return spec.Namespace + "/" + spec.Name
}

// appContainerCount says how many app containers a pod has.
func appContainerCount(n int) string {
	switch n {
	case 0:
		return "no app containers"
	case 1:
		return "one app container"
	}
	return fmt.Sprintf("%d app containers", n)
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

// seedBugText names the seed bug in a failure.
const seedBugText = "the seed bug: ipamd records the IP under an ID that no CNI DEL ever carries, so the IP leaks"

// diagnoseID explains why listed is not the sandbox ID truth of pod.
func diagnoseID(truth, listed string, pod fixture.Pod) string {
	bare := stripScheme(listed)
	if appID, _, ok := appContainerOf(listed, []fixture.Pod{pod}); ok {
		return fmt.Sprintf("listed under the ID of its app container %s%s instead of its infra sandbox ID — %s",
			appID, formOf(listed, appID), seedBugText)
	}
	switch {
	case bare != listed && bare == truth:
		return fmt.Sprintf("listed under a %q scheme; the CNI plugin receives the bare ID", strings.TrimSuffix(listed, bare))
	case len(bare) == shortIDLength && strings.HasPrefix(truth, bare):
		return "listed under a 12-character prefix of its sandbox ID (the short ID); the CNI plugin receives the full-length ID"
	case len(bare) < len(truth) && strings.HasPrefix(truth, bare):
		return fmt.Sprintf("listed under a %d-character prefix of its %d-character sandbox ID", len(bare), len(truth))
	case strings.EqualFold(bare, truth):
		return "listed under its sandbox ID in other letter case; IDs are compared byte for byte"
	default:
		return "listed under another ID, not its infra sandbox ID"
	}
}

// formOf says in which form listed names the container with full ID id:
// under a scheme, as a prefix, or as is.
func formOf(listed, id string) string {
	bare := stripScheme(listed)
	var parts []string
	if bare != listed {
		parts = append(parts, fmt.Sprintf("under a %q scheme", strings.TrimSuffix(listed, bare)))
	}
	if len(bare) < len(id) {
		parts = append(parts, fmt.Sprintf("as a %d-character prefix", len(bare)))
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, ", ") + ")"
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
