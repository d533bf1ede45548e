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
			"every pod is listed under its infra sandbox ID, byte for byte: full length, no scheme prefix", checkSandboxIDExact},
		{"no-app-container-ids", rule1,
			"no application container's ID is ever listed as a sandbox ID, or found by GetSandbox", checkNoAppContainerIDs},
		{"pod-identity", ruleIdentity,
			"a listed sandbox carries its pod's name, namespace, UID and attempt", checkPodIdentity},
		{"host-network-marked", ruleHostNetwork,
			"host-network pods are listed with HostNetwork set, other pods without", checkHostNetwork},
		{"get-sandbox-matches", ruleGet,
			"GetSandbox of a running sandbox returns it Ready, with its own ID and identity", checkGetSandbox},
		{"get-empty-id-invalid", ruleInvalid,
			"GetSandbox of an empty ID fails with ErrInvalidArgument", checkGetEmptyID},
		{"stopped-listed-notready", rule3,
			"a running sandbox is Ready; once stopped but not removed it is still listed, NotReady", checkStopped},
		{"removed-not-found", ruleNotFound,
			"a removed sandbox is no longer listed, and GetSandbox of it fails with ErrNotFound", checkRemoved},
		{"restarted-pod-ids", rule1,
			"a restarted pod's sandboxes (attempt 0 stopped, attempt 1 running) are each listed under their own ID", checkRestarted},
		{"no-plain-containers", rule4,
			"a container that is not a pod sandbox is neither listed nor found by GetSandbox", checkNoPlainContainers},
		{"unreachable-is-error", rule2,
			"against an endpoint nobody serves, ListSandboxes and GetSandbox fail with ErrUnavailable", checkUnreachable},
		{"wrong-runtime-refused", ruleWrong,
			"against a runtime the adapter was not built for, ListSandboxes fails with ErrWrongRuntime", checkWrongRuntime},
		{"containerd-without-cri-refused", ruleNoCRI,
			"against a containerd whose CRI plugin is disabled (Docker's own), Info and ListSandboxes fail with ErrWrongRuntime, never an empty list", checkNoCRI},
		{"deadline-short", rule5,
			"calls with very short deadlines return (with a result or an error) promptly", checkDeadlineShort},
		{"deadline-hung-runtime", rule5,
			"against a runtime that accepts connections and never answers, calls fail by their deadline", checkDeadlineHung},
		{"concurrent-lists-agree", rule5,
			"concurrent ListSandboxes calls all succeed and agree on every pod", checkConcurrentLists},
		{"ids-stable-across-relaunch", rule1,
			"a relaunched adapter process lists every pod under the same ID", checkRelaunch},
		{"scale-listing", rule1,
			"every pod of a large node is listed under its sandbox ID with its identity", checkScale},
	}
}
