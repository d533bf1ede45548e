// Package schema holds the JSON documents of ipamd's introspection API. Both
// the daemon (package introspect) and ipamctl's client (package introspect/client) use
// these types, so the two can never disagree about a field name.
package schema

import "time"

// Paths of the introspection API.
const (
	PathPods      = "/v1/pods"
	PathPool      = "/v1/pool"
	PathAdapter   = "/v1/adapter"
	PathENIs      = "/v1/enis"
	PathReconcile = "/v1/reconcile" // POST; ?dryRun=true; admin socket only
	PathRelease   = "/v1/release"   // POST ReleaseRequest: an operator frees one attachment; admin socket only
	PathHealthz   = "/healthz"      // 200 while ipamd runs
	PathReadyz    = "/readyz"       // 200 when ipamd can serve ADD, else 503 and why
	PathMetrics   = "/metrics"
	PathRoutes    = "/v1/routes" // the routes to other nodes (routes.nodes)
)

// Routes is GET /v1/routes: what the last sync of the routes to other
// nodes' podCIDRs did (routes.nodes).
type Routes struct {
	// Node is this node; Protocol the route protocol of ipamd's routes.
	Node     string `json:"node"`
	Protocol int    `json:"protocol"`
	// Routes are ipamd's routes as the last sync left them.
	Routes []NodeRoute `json:"routes"`
	// Skipped lists the nodes' ranges no route was made for, and why.
	Skipped []SkippedRoute `json:"skipped"`
	// Error is set when the sync could not read or change the table.
	Error string `json:"error,omitempty"`
}

// NodeRoute is one route to another node's range.
type NodeRoute struct {
	Node string `json:"node"`
	Dst  string `json:"dst"`
	Via  string `json:"via"`
	Dev  string `json:"dev"`
}

// SkippedRoute is a node's range without a route.
type SkippedRoute struct {
	Node   string `json:"node"`
	Dst    string `json:"dst,omitempty"`
	Reason string `json:"reason"`
}

// Pod is one assignment: the pod interface identified by its infra
// sandbox ID, and its address.
type Pod struct {
	SandboxID string `json:"sandboxID"`
	Network   string `json:"network"`
	IfName    string `json:"ifName"`
	Name      string `json:"name"`
	Namespace string `json:"namespace"`
	UID       string `json:"uid"`
	IP        string `json:"ip"`
	Prefix    string `json:"prefix"` // the address in CIDR notation
	// IPs and Prefixes list every address of the attachment, one per
	// family (a dual-stack pod has two), IP and Prefix first.
	IPs          []string  `json:"ips"`
	Prefixes     []string  `json:"prefixes"`
	Gateway      string    `json:"gateway,omitempty"`
	Group        string    `json:"group"` // "static" or an ENI ID
	AssignedAt   time.Time `json:"assignedAt"`
	AgeSeconds   float64   `json:"ageSeconds"`
	AgeFormatted string    `json:"age"`
}

// Pods is GET /v1/pods.
type Pods struct {
	Pods []Pod `json:"pods"`
}

// Group is one address group's share of the pool.
type Group struct {
	Group    string `json:"group"`
	Total    int    `json:"total"`
	Assigned int    `json:"assigned"`
	Cooling  int    `json:"cooling"`
	Free     int    `json:"free"`
}

// Family is one address family's share of the pool. Counts saturate at
// 2^64-1 (an IPv6 /64 holds 2^64 addresses).
type Family struct {
	Family      string `json:"family"` // ipv4 or ipv6
	Total       uint64 `json:"total"`
	Assigned    uint64 `json:"assigned"`
	Cooling     uint64 `json:"cooling"`
	Quarantined uint64 `json:"quarantined"`
	Free        uint64 `json:"free"`
}

// Range is one block of the pool: a static CIDR or a delegated prefix.
type Range struct {
	Prefix      string `json:"prefix"`
	Family      string `json:"family"`
	Group       string `json:"group"`
	First       string `json:"first"`
	Last        string `json:"last"`
	Gateway     string `json:"gateway,omitempty"`
	Size        uint64 `json:"size"`
	Assigned    uint64 `json:"assigned"`
	Cooling     uint64 `json:"cooling"`
	Quarantined uint64 `json:"quarantined"`
	Free        uint64 `json:"free"`
	// Retiring: the range is no longer the node's (its Node deleted or
	// registered again with other podCIDRs); nothing is handed out of it,
	// and it leaves once no pod holds an address of it.
	Retiring bool `json:"retiring,omitempty"`
}

// Recovery says how the datastore found its checkpoint at start.
type Recovery struct {
	Checkpoint  string `json:"checkpoint"` // loaded, missing or corrupt
	Detail      string `json:"detail,omitempty"`
	Assignments int    `json:"assignments"`
	// Unproven counts the addresses ipamd cannot prove free right now:
	// Proof.Quarantined under its first name, kept for scripts that
	// read it.
	Unproven int `json:"unproven"`
}

// Pool is GET /v1/pool.
type Pool struct {
	Source   string `json:"source"` // static or aws
	Total    int    `json:"total"`
	Assigned int    `json:"assigned"`
	Free     int    `json:"free"`
	Cooling  int    `json:"cooling"`
	// Unproven counts the addresses ipamd cannot prove free, quarantined
	// or held back while the store is unproven: Proof.Quarantined under
	// its first name, kept for scripts that read it.
	Unproven int     `json:"unproven"`
	Groups   []Group `json:"groups"`
	// Families sums the pool per address family; Ranges lists its blocks
	// of more than one address (static CIDRs, delegated prefixes).
	Families []Family `json:"families"`
	Ranges   []Range  `json:"ranges"`
	Recovery Recovery `json:"recovery"`
	Proof    Proof    `json:"proof"`
	// Waiting, while the pool has no range, names what it waits for
	// (the node source: "Node X's spec.podCIDRs").
	Waiting string `json:"waiting,omitempty"`
}

// Proof says whether ipamd hands out addresses. Without a trusted
// checkpoint it hands out none until the runtime and the node account for
// every pod's address; Waiting names what is missing.
type Proof struct {
	Unproven    bool     `json:"unproven"`
	Quarantined int      `json:"quarantined"`
	Waiting     []string `json:"waiting,omitempty"`
}

// RuntimeInfo is what the adapter says about itself and its runtime.
type RuntimeInfo struct {
	AdapterName    string `json:"adapterName"`
	AdapterVersion string `json:"adapterVersion"`
	RuntimeName    string `json:"runtimeName"`
	RuntimeVersion string `json:"runtimeVersion"`
	Endpoint       string `json:"endpoint"`
}

// Health is the adapter plugin's supervision state.
type Health struct {
	State      string    `json:"state"`
	Healthy    bool      `json:"healthy"`
	PID        int       `json:"pid,omitempty"`
	Restarts   int       `json:"restarts"`
	LastError  string    `json:"lastError,omitempty"`
	LastChange time.Time `json:"lastChange"`
}

// Reconcile is one reconcile pass's outcome.
type Reconcile struct {
	At       time.Time `json:"at"`
	DryRun   bool      `json:"dryRun"`
	Listed   int       `json:"listed"`
	Adopted  int       `json:"adopted"`
	Released []Pod     `json:"released"` // would be released, in a dry run
	Error    string    `json:"error,omitempty"`
	// Confirmed counts assignments whose sandbox was listed for the first
	// time; Conflicts addresses newly quarantined because a pod holds them
	// while the datastore records them free or under another sandbox.
	Confirmed   int `json:"confirmed"`
	Conflicts   int `json:"conflicts"`
	Quarantined int `json:"quarantined"`
	// Unproven: nothing is handed out yet; Unaccounted says which pods'
	// addresses nothing accounted for.
	Unproven    bool     `json:"unproven"`
	Unaccounted []string `json:"unaccounted,omitempty"`
	// Missing: sandbox IDs CNI added that the adapter does not list (it is
	// blind, and the pass released nothing).
	Missing []string `json:"missing,omitempty"`
}

// Adapter is GET /v1/adapter.
type Adapter struct {
	Name   string   `json:"name"` // table name, "path", or "" when none was found
	Binary string   `json:"binary"`
	Args   []string `json:"args"`
	Reason string   `json:"reason"` // how it was chosen
	// AlsoFound lists other runtime sockets auto saw answering.
	AlsoFound []string    `json:"alsoFound,omitempty"`
	Error     string      `json:"error,omitempty"`
	Runtime   RuntimeInfo `json:"runtime"`
	Health    Health      `json:"health"`
	Last      *Reconcile  `json:"lastReconcile,omitempty"`
	Interval  string      `json:"reconcileInterval"`
	Grace     string      `json:"reconcileGrace"`
	// SeesCNI names the sandbox, added by CNI, whose
	// listing showed that the adapter sees what CNI sees; empty until one
	// has (then a sandbox CNI added that no listing shows keeps every
	// release back).
	SeesCNI string `json:"seesCNI,omitempty"`
}

// Error is the body of every non-2xx answer.
type Error struct {
	Error string `json:"error"`
}

// ReleaseRequest is POST /v1/release: the attachment an operator frees.
type ReleaseRequest struct {
	Network   string `json:"network"`
	SandboxID string `json:"sandboxID"`
	IfName    string `json:"ifName"`
	// Force releases even when the runtime or the node shows the sandbox
	// or its address in use; those addresses are then quarantined while
	// that lasts.
	Force bool `json:"force,omitempty"`
}

// Release is POST /v1/release's answer.
type Release struct {
	Released Pod `json:"released"`
	// Forced: the release was forced.
	Forced bool `json:"forced,omitempty"`
	// Evidence lists what showed the attachment in use (a forced release
	// overrode it).
	Evidence []string `json:"evidence,omitempty"`
	// Quarantined lists the released addresses that are never handed out
	// while the runtime or the node still shows them held.
	Quarantined []string `json:"quarantined,omitempty"`
}
