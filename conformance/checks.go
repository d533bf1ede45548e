package conformance

import "context"

// The rules checks cite. Rules 1-5 are the adapter contract's five rules
// (package runtime); the others are the contract's method documentation.
const (
	rule1 = "rule 1: Sandbox.ID is the full infra sandbox ID the CNI plugin receives, never an app container's"
	rule2 = "rule 2: a failure to reach or read the runtime is an error, never an empty list"
	rule3 = "rule 3: stopped sandboxes that are not removed are listed NotReady"
	rule4 = "rule 4: containers that are not Kubernetes pod sandboxes are never listed"
	rule5 = "rule 5: context deadlines are honoured; calls are safe concurrently"

	ruleInfo        = "contract: Info names the adapter and the runtime"
	ruleIdentity    = "contract: Sandbox.Name, Namespace, UID and Attempt identify the pod"
	ruleHostNetwork = "contract: Sandbox.HostNetwork marks pods that own no pod IP"
	ruleGet         = "contract: GetSandbox returns one sandbox by its full ID"
	ruleNotFound    = "contract: GetSandbox returns ErrNotFound once the runtime no longer has the sandbox"
	ruleInvalid     = "contract: ErrInvalidArgument for a malformed request (an empty ID)"
	ruleWrong       = "contract: ErrWrongRuntime when the endpoint serves another runtime"
	ruleFullID      = "rule 1 and contract: GetSandbox takes only the full sandbox ID; a prefix, other case or a name is ErrNotFound"
	ruleIPs         = "contract: Sandbox.IPs are the addresses the runtime recorded for exactly that sandbox, every family of a dual-stack pod, never another pod's"
	ruleFresh       = "contract: a listing is never older than the call; ipamd's \"the adapter sees what CNI sees\" depends on it"
	ruleRestart     = "rule 2: while the runtime is down calls fail with ErrUnavailable; once it is back they recover in the same process"
)

// Check is one verifiable behaviour of an adapter.
type Check struct {
	// ID is stable across releases: reports, --focus and CI key on it.
	ID string
	// Rule is the part of the contract the check verifies.
	Rule string
	// Statement is what a passing adapter does, in one line.
	Statement string

	run func(ctx context.Context, s *session) error
}

// Checks returns every check in the order the suite runs them: quick ones
// first, the scale check last.
func Checks() []Check {
	return []Check{
		{"info-names-runtime", ruleInfo,
			"Info returns the adapter's name and the runtime's name", checkInfo},
		{"sandbox-id-exact", rule1,
			"every pod of the run (several, one and no app containers, every attempt of a restarted pod, host network; in the run's namespace and in kube-system) is listed under its infra sandbox ID, byte for byte: full length, no scheme prefix", checkSandboxIDExact},
		{"no-app-container-ids", rule1,
			"no app container ID of any pod the run created is listed as a sandbox ID (in any form), or found by GetSandbox", checkNoAppContainerIDs},
		{"no-duplicate-ids", rule1,
			"a listing holds each sandbox ID once", checkNoDuplicateIDs},
		{"pod-identity", ruleIdentity,
			"every pod of the run, in the run's namespace and in kube-system, found by its exact sandbox ID, is listed with its pod's name, namespace, UID and attempt", checkPodIdentity},
		{"host-network-marked", ruleHostNetwork,
			"host-network pods are listed with HostNetwork set, other pods without, in kube-system as elsewhere", checkHostNetwork},
		{"get-sandbox-matches", ruleGet,
			"GetSandbox of a running sandbox (several, one and no app containers, in either namespace) returns it Ready, with its own ID and identity", checkGetSandbox},
		{"get-sandbox-full-id-only", ruleFullID,
			"GetSandbox of a 12-character prefix, a longer prefix, the ID in upper case, the pod's name or the sandbox's name fails with ErrNotFound", checkGetFullIDOnly},
		{"pod-ips-match", ruleIPs,
			"a running sandbox lists exactly the IPs the runtime recorded for it, family by family (dual-stack, IPv6-only and IPv4-only pods in both namespaces); a stopped or host-network one none of another pod's", checkPodIPs},
		{"get-empty-id-invalid", ruleInvalid,
			"GetSandbox of an empty ID fails with ErrInvalidArgument", checkGetEmptyID},
		{"stopped-listed-notready", rule3,
			"a running sandbox is Ready; once stopped but not removed it is still listed, NotReady", checkStopped},
		{"removed-not-found", ruleNotFound,
			"a removed sandbox is no longer listed, and GetSandbox of it fails with ErrNotFound", checkRemoved},
		{"restarted-pod-ids", rule1,
			"a pod's three sandbox attempts (0 and 1 stopped, 2 running, each with several app containers) are each listed under their own ID", checkRestarted},
		{"recreated-pod-own-identity", ruleRecreated,
			"a pod made again under an earlier pod's namespace and name (new UID, attempt 0, where the runtime gives one a new address), as a StatefulSet does, is listed and got under its own sandbox ID with its own UID, attempt, state and addresses of each family (a dual-stack pod), while the earlier sandbox is listed NotReady and once it is removed", checkRecreated},
		{"list-get-agree", ruleListGet,
			"GetSandbox of every listed ID, Ready and NotReady, returns that sandbox with the same ID, state, identity and addresses of each family", checkListGetAgree},
		{"listing-fresh", ruleFresh,
			"a pod in the run's namespace and one in kube-system are listed by the first ListSandboxes after the runtime created them, and gone from the first after they were removed", checkFreshness},
		{"no-plain-containers", rule4,
			"a container that is not a pod sandbox is neither listed nor found by GetSandbox", checkNoPlainContainers},
		{"unreachable-is-error", rule2,
			"against an endpoint nobody serves, ListSandboxes and GetSandbox fail with ErrUnavailable, and with deadlines of 100 ms, 1 s and 1.9 s fail by their deadline, never with a list", checkUnreachable},
		{"wrong-runtime-refused", ruleWrong,
			"against a runtime the adapter was not built for, ListSandboxes fails with ErrWrongRuntime, and with deadlines of 100 ms, 1 s and 1.9 s never returns a list", checkWrongRuntime},
		{"containerd-without-cri-refused", ruleNoCRI,
			"against a containerd whose CRI plugin is disabled (Docker's own), Info and ListSandboxes fail with ErrWrongRuntime, never an empty list, also with deadlines of 100 ms, 1 s and 1.9 s", checkNoCRI},
		{"deadline-short", rule5,
			"calls with very short deadlines return promptly, with an error or a listing that agrees with the last good one", checkDeadlineShort},
		{"deadline-hung-runtime", rule5,
			"against a runtime that accepts connections and never answers, calls fail by their deadline", checkDeadlineHung},
		{"concurrent-lists-agree", rule5,
			"concurrent ListSandboxes calls all succeed and agree on every pod", checkConcurrentLists},
		{"ids-stable-across-relaunch", rule1,
			"a relaunched adapter process lists every pod under the same ID", checkRelaunch},
		{"runtime-restart", ruleRestart,
			"while the runtime restarts under the adapter, calls fail with ErrUnavailable (also with deadlines of 100 ms, 1 s and 1.9 s, never with a list); then the same adapter lists the same IDs", checkRuntimeRestart},
		{"scale-listing", rule1,
			"every pod of a large node is listed under its sandbox ID with its identity", checkScale},
	}
}
