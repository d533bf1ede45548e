package schema

import "time"

// Paths of the operator checks.
const (
	PathCheck = "/v1/check" // GET: ipamd, the runtime and the kernel compared
	PathWho   = "/v1/who"   // GET ?q=ADDRESS|SANDBOX-ID|POD-NAME
)

// Disagreement is one thing ipamd, the runtime and the kernel do not
// agree on. Kind is stable for scripts; Words says it for a person.
type Disagreement struct {
	Kind      string `json:"kind"`
	Address   string `json:"address,omitempty"`
	SandboxID string `json:"sandboxID,omitempty"`
	Link      string `json:"link,omitempty"`
	Words     string `json:"words"`
}

// Check is GET /v1/check.
type Check struct {
	At          time.Time `json:"at"`
	Assignments int       `json:"assignments"`
	Sandboxes   int       `json:"sandboxes"`
	PodLinks    int       `json:"podLinks"`
	// Settling counts assignments and sandboxes too young to judge (an
	// ADD being wired, a sandbox being created).
	Settling int `json:"settling"`
	// Attempts is how many times the snapshots were taken; Raced says
	// that ipamd's assignments or the node's pod links changed during
	// every attempt, so a disagreement may be a change in flight.
	Attempts      int            `json:"attempts"`
	Raced         bool           `json:"raced"`
	Disagreements []Disagreement `json:"disagreements"`
	// NotCompared names each source the check could not read, and why:
	// the check did not look there, so it must not pass (ipamctl check
	// exits 3 when this is set and there is no disagreement). Empty when
	// every source was compared.
	NotCompared []NotCompared `json:"notCompared"`
	Notes       []string      `json:"notes,omitempty"`
}

// Sources a check compares, as NotCompared.Source names them.
const (
	SourceRuntime = "runtime" // the runtime's sandboxes, through ipamd's adapter
	SourceKernel  = "kernel"  // the node's pod links and routes
)

// NotCompared is one source a check could not read.
type NotCompared struct {
	// Source is SourceRuntime or SourceKernel: stable for scripts.
	Source string `json:"source"`
	// Reason says why, for a person.
	Reason string `json:"reason"`
}

// RuntimeSandbox is what the runtime says about one sandbox.
type RuntimeSandbox struct {
	// Listed is false when the runtime's listing does not show it.
	Listed    bool      `json:"listed"`
	State     string    `json:"state,omitempty"` // Ready or NotReady
	CreatedAt time.Time `json:"createdAt,omitzero"`
	IPs       []string  `json:"ips,omitempty"`
}

// Holder is one assignment the query matched and its sandbox's state.
type Holder struct {
	Pod     Pod             `json:"pod"`
	Runtime *RuntimeSandbox `json:"runtime,omitempty"`
}

// Event is one entry of ipamd's in-memory history.
type Event struct {
	At        time.Time `json:"at"`
	Kind      string    `json:"kind"`             // assigned, adopted, released
	Reason    string    `json:"reason,omitempty"` // cni_add; cni_del, cni_gc, runtime_gone, operator; the evidence of an adoption
	IP        string    `json:"ip"`
	SandboxID string    `json:"sandboxID"`
	Network   string    `json:"network"`
	IfName    string    `json:"ifName"`
	Pod       string    `json:"pod,omitempty"` // namespace/name
}

// Who is GET /v1/who.
type Who struct {
	Query string `json:"query"`
	// QueryKind is how the query was read: address, sandbox or pod.
	QueryKind string   `json:"queryKind"`
	Holders   []Holder `json:"holders"`
	// Sandboxes are runtime sandboxes the query matched that hold nothing.
	Sandboxes map[string]RuntimeSandbox `json:"sandboxes,omitempty"`
	History   []Event                   `json:"history"`
	// HistoryDropped counts events the bounded history no longer keeps.
	HistoryDropped uint64 `json:"historyDropped"`
	RuntimeError   string `json:"runtimeError,omitempty"`
}
