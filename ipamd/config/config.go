// Package config is ipamd's configuration: one YAML file, every field
// overridable by an environment variable, validated before anything starts.
//
// The environment variable of a field is derived from its YAML path:
// IPAMD_ followed by the path's segments, upper-cased and joined by
// underscores (runtime.endpoint -> IPAMD_RUNTIME_ENDPOINT,
// ipSource.static.cidrs -> IPAMD_IPSOURCE_STATIC_CIDRS). List fields take a
// comma-separated value. Reference lists every field with its variable and
// default; `ipamd config-reference` prints it.
//
// That derivation is the only scheme, the aws source's fields included
// (ipSource.aws.warmIPTarget -> IPAMD_IPSOURCE_AWS_WARMIPTARGET). The
// three pool targets also answer to the AWS VPC CNI's variables
// WARM_IP_TARGET, MINIMUM_IP_TARGET and WARM_ENI_TARGET (Field.Alias), so
// an aws-node manifest's settings carry over; when a target's IPAMD_
// variable is set too, the IPAMD_ variable wins.
//
// The package only composes: each component owns its part of the config,
// with its defaults and its validation, and Config embeds that part as it
// is: reconcileconf.Settings (reconcile), poolconf.Config (ipSource.pool),
// awsconf.Config (ipSource.aws), reconcileconf.Tuning, awsconf.Tuning and
// pluginconf.Supervision (under advanced). Each part is a leaf package
// beside its component that imports no client library, so loading,
// testing and fuzzing the config compiles neither client-go, the AWS SDK,
// gRPC nor go-plugin; the static source's own checks (ipsource/static,
// standard library only) are the one component package it imports. The
// sections defined here are the daemon's own wiring (sockets, listeners,
// the runtime selection, the pod links on this host). Knobs most operators never touch sit
// under advanced; a key that moved fails to load with a hint naming its
// new place (renamed.go).
//
// The runtime adapter is picked from an explicit name-to-binary table
// (Adapters), never from init-time registration, so a typo in
// runtime.adapter fails when the config loads rather than when the
// reconciler first needs the runtime. The config only checks the name or
// path; resolving it to a command line (probing the runtime sockets for
// auto) is the daemon's wiring.
//
// See docs/architecture.md for where this package sits and the life of an
// ADD, a DEL, a reconcile pass and a restart through the daemon.
package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/sandboxipam/sandboxipam/ipamd/aliveness/aliveconf"
	"github.com/sandboxipam/sandboxipam/ipamd/ipsource/aws/awsconf"
	"github.com/sandboxipam/sandboxipam/ipamd/ipsource/pool/poolconf"
	"github.com/sandboxipam/sandboxipam/ipamd/reconcile/reconcileconf"
)

// Config is ipamd's whole configuration. The comment on each field states
// its default; DefaultConfig builds exactly those values.
type Config struct {
	// Socket is the unix socket the CNI plugin calls; it serves the wire
	// framing (package wire). It is created owner-only (0600) in a 0700
	// directory. Default /run/sandboxipam/ipamd.sock.
	Socket string `yaml:"socket" desc:"unix socket of the CNI-facing API (created 0600)"`
	// StateDir holds the checkpoint. Default /var/lib/sandboxipam.
	StateDir string `yaml:"stateDir" desc:"directory of ipamd's durable state"`
	// Checkpoint is the checkpoint file. Default empty: ipamd.checkpoint
	// in StateDir.
	Checkpoint string `yaml:"checkpoint" desc:"checkpoint file; empty means <stateDir>/ipamd.checkpoint"`
	// Network is the CNI network name ipamd serves and reconciles.
	// Default "sandboxipam".
	Network string `yaml:"network" desc:"CNI network name whose attachments ipamd reconciles"`
	// IfName is the pod interface name used when assignments are rebuilt
	// from the runtime after a lost checkpoint. Default "eth0".
	IfName string `yaml:"ifName" desc:"pod interface name assumed when rebuilding from the runtime"`
	// Cooldown is how long a released address waits before reuse, so a
	// late packet or a slow DEL of the old pod does not reach the new one.
	// Default 30s. 0s is used as written: no cooldown, a released address
	// may go to the next pod at once (for a small pool that cannot spare
	// addresses); negative is refused.
	Cooldown time.Duration `yaml:"cooldown" desc:"how long a released IP waits before reuse"`
	// Reconcile configures the reconciler; package reconcileconf owns it.
	Reconcile reconcileconf.Settings `yaml:"reconcile"`
	// Runtime picks and configures the runtime adapter.
	Runtime Runtime `yaml:"runtime"`
	// IPSource says where addresses come from.
	IPSource IPSource `yaml:"ipSource"`
	// Introspection is the JSON HTTP API for operators (ipamctl).
	Introspection Listener `yaml:"introspection"`
	// Metrics is the Prometheus endpoint.
	Metrics Metrics `yaml:"metrics"`
	// Alive is where ipamd answers the reclaimer's "is this node alive?"
	// on the data plane (ipSource.type pool); package
	// aliveness/aliveconf owns it.
	Alive aliveconf.Config `yaml:"alive"`
	// Log configures ipamd's structured log.
	Log Log `yaml:"log"`
	// PodLinks says how pods are wired on this host and where ipamd finds
	// their links: the node's own evidence of pod addresses.
	PodLinks PodLinks `yaml:"podLinks"`
	// CNI is how ipamd announces itself to the runtime.
	CNI CNI `yaml:"cni"`
	// Routes configures routes between nodes.
	Routes Routes `yaml:"routes"`
	// Advanced holds the tuning knobs most operators never touch.
	Advanced Advanced `yaml:"advanced"`
}

// PodLinks is about the pod links on this host: the host side of the veth
// pair the CNI plugin makes for each pod it wires. After a lost checkpoint,
// a pod whose runtime reports no IP is accounted for by the host routes
// through its link. The block was called node, a word that also named the
// podCIDR source (ipSource.type node, the Node object's spec.podCIDRs);
// podLinks says what it holds: what the links are called (hostVethPrefix),
// where they are (netNS), and whether every pod has one (podWiring).
type PodLinks struct {
	// HostVethPrefix is the CNI plugin's hostVethPrefix (at most 7
	// characters). Default "sbx", the plugin's default.
	HostVethPrefix string `yaml:"hostVethPrefix" desc:"the CNI plugin's hostVethPrefix, to find pod links on the node"`
	// PodWiring says who wires the pods of ipamd's network, which decides
	// whether a missing pod link proves anything after a lost checkpoint:
	//
	//   - "plugin": the sandboxipam plugin is the main plugin of every
	//     attachment on the network, so every pod has a pod link on the
	//     node, and a pod without one (PodWiring's "no link, no address"
	//     inference, see advanced.reconcile.linkGrace) holds nothing; an ADD from the plugin
	//     running as IPAM only is refused, naming this field.
	//   - "ipamOnly": the plugin runs as the IPAM plugin of another main
	//     plugin: pods have no link of its own, so ipamd never infers
	//     anything from a missing one, and ipamctl check does not read
	//     pod links.
	//   - "auto": "plugin" when ipamd writes the conflist itself
	//     (cni.confListPath set: that conflist makes sandboxipam the main
	//     plugin), else unknown: the inference is never made, and after a
	//     lost checkpoint a live pod whose address neither the runtime nor
	//     the node shows keeps ipamd from handing out addresses until one
	//     of them shows it or an operator releases the pod.
	//
	// Default "auto".
	PodWiring string `yaml:"podWiring" desc:"who wires pods on the network: plugin (sandboxipam is the main plugin of every pod), ipamOnly, or auto (plugin when cni.confListPath is set, else unknown: no inference from a missing pod link)"`
	// NetNS is the network namespace whose pod links ipamd reads, by path.
	// Default empty: ipamd's own, which on a node is the host's (ipamd
	// runs with hostNetwork).
	NetNS string `yaml:"netNS" desc:"network namespace of the pod links, by path (empty: ipamd's own)"`
}

// Runtime selects the runtime adapter plugin.
type Runtime struct {
	// Adapter is the name of a shipped adapter (a row of Adapters: docker,
	// dockershim, containerd and crio today), auto (probe the sockets of
	// the table's rows in crictl's order) or a path to a third-party
	// adapter binary. Default "auto".
	Adapter string `yaml:"adapter" desc:"a shipped adapter's name (another is refused, naming them all), auto, or an adapter binary's absolute path"`
	// Endpoint is the runtime socket URI passed to the adapter as
	// --endpoint. Default empty: the adapter's own default, or the
	// socket auto found.
	Endpoint string `yaml:"endpoint" desc:"runtime socket URI passed as --endpoint (empty: adapter default)"`
	// PluginDir holds the named adapters' binaries. Default empty: the
	// directory "adapters" next to the ipamd binary.
	PluginDir string `yaml:"pluginDir" desc:"directory of the named adapter binaries (empty: <dir of ipamd>/adapters)"`
	// SHA256 pins the adapter binary's hex SHA-256; a mismatch refuses to
	// launch it. Default empty: not checked.
	SHA256 string `yaml:"sha256" desc:"hex SHA-256 the adapter binary must have (empty: not checked)"`
	// Args are extra arguments appended to the adapter's command line.
	// Default none.
	Args []string `yaml:"args" desc:"extra adapter arguments (env: comma-separated)"`
	// AutoMTLS secures the plugin connection with go-plugin's AutoMTLS.
	// It costs 25-35 ms per adapter launch. Default true.
	AutoMTLS bool `yaml:"autoMTLS" desc:"mutual TLS on the plugin connection"`
}

// IPSource says where the pool's addresses come from.
type IPSource struct {
	// Type is static, podCIDR, pool or aws. It has no default: a config
	// that chooses none is refused, naming the choices. A default source
	// (once static 198.18.0.0/24) started every node given an empty
	// config on the same addresses. podCIDR (once "node") is named after
	// what it serves: the Node object's spec.podCIDRs.
	Type string `yaml:"type" desc:"static (CIDRs from config), podCIDR (the Node's spec.podCIDRs), pool (blocks claimed from an IPPool) or aws"`
	// NodeName is this node's Kubernetes Node name: the podCIDR source reads
	// that Node, static.nodes picks its entry, routes.nodes skips it. The
	// DaemonSet sets NODE_NAME from the downward API's spec.nodeName.
	// Default empty.
	NodeName string `yaml:"nodeName" envAlias:"NODE_NAME" desc:"this node's Kubernetes Node name (the DaemonSet sets NODE_NAME from spec.nodeName)"`
	// Static configures the static source.
	Static Static `yaml:"static"`
	// PodCIDR configures the podCIDR source.
	PodCIDR PodCIDRSource `yaml:"podCIDR"`
	// Pool configures the pool source; package ipsource/pool/poolconf
	// owns it (its Config's field comments state the defaults).
	Pool poolconf.Config `yaml:"pool"`
	// AWS configures the aws (ENI) source; package ipsource/aws/awsconf
	// owns it (its fields, defaults, validation, and the AWS VPC CNI's variable
	// names as aliases of the targets' IPAMD_ variables).
	AWS awsconf.Config `yaml:"aws"`
}

// PodCIDRSource is the podCIDR source (package ipsource/podcidr): the pool
// is the Node's spec.podCIDRs, which kube-controller-manager assigns with
// --allocate-node-cidrs.
type PodCIDRSource struct {
	// Kubeconfig is the kubeconfig file to reach the API server with; the
	// routes (routes.nodes) use it too. Default empty: the in-cluster
	// config of the pod's service account.
	Kubeconfig string `yaml:"kubeconfig" desc:"kubeconfig file for the podCIDR source and routes.nodes (empty: in-cluster service account)"`
}

// Routes configures the routes ipamd keeps between nodes.
type Routes struct {
	// Nodes keeps, in the host's main routing table, one route per other
	// node's spec.podCIDRs (and, with ipSource.type pool, per other
	// node's IPBlock) via that node's InternalIP (host-gw), tagged with
	// ipamd's own route protocol (routes.Protocol, 201). It needs
	// CAP_NET_ADMIN and the Kubernetes API (ipSource.podCIDR.kubeconfig).
	// Default false.
	Nodes bool `yaml:"nodes" desc:"route other nodes' podCIDRs (and, in pool mode, IPBlocks) via their InternalIP (needs CAP_NET_ADMIN)"`
}

// Static is the static source: fixed CIDRs.
type Static struct {
	// CIDRs are the pod address ranges. Default none: with type static,
	// cidrs or nodes must be given (198.18.0.0/15, a benchmarking range,
	// is the tests' and examples' choice).
	CIDRs []string `yaml:"cidrs" desc:"pod address ranges, IPv4 and/or IPv6 of any size (both families: each pod gets one address of each) (env: comma-separated)"`
	// Reserved addresses are never handed out (gateways, the host).
	// Default none.
	Reserved []string `yaml:"reserved" desc:"addresses never handed out (env: comma-separated)"`
	// Gateways has one entry per CIDR: the pods' default-route next hop
	// there, or "" for none (the CNI plugin routes via its host-side
	// veth). A gateway is never handed out. Default none.
	Gateways []string `yaml:"gateways" desc:"per-CIDR pod gateway, \"\" for none (env: comma-separated)"`
	// Nodes gives each node its own CIDRs, by Node name, for clusters
	// whose controller assigns no podCIDRs: the entry of ipSource.nodeName
	// replaces cidrs, reserved addresses outside it are ignored, and the
	// entries may not overlap. Without it, cidrs is one node's pool: every
	// node given the same cidrs hands out the same addresses. Default
	// none.
	Nodes map[string][]string `yaml:"nodes" desc:"per-node CIDRs by Node name, chosen by ipSource.nodeName (env: node-1=198.18.1.0/24 fd00:1::/64,node-2=...)"`
}

// Listener is the operator API: reads over HTTP on a TCP address, and the
// calls that change state (release, reconcile) on a unix socket only the
// node's administrator can reach.
type Listener struct {
	// Address is host:port. Default 127.0.0.1:61679 (loopback only). It
	// serves reads only: any local process can reach it.
	Address string `yaml:"address" desc:"host:port of the JSON introspection API (reads only)"`
	// AdminSocket is the unix socket of the calls that change state
	// (ipamctl release, reconcile). It is created owner-only (0600) in a
	// 0700 directory, and serves only callers whose SO_PEERCRED uid is 0
	// or ipamd's own. Default empty: admin.sock in socket's directory
	// (/run/sandboxipam/admin.sock).
	AdminSocket string `yaml:"adminSocket" desc:"unix socket of release and reconcile, root or ipamd's uid only (empty: admin.sock beside socket)"`
}

// Metrics is the Prometheus endpoint.
type Metrics struct {
	// Address is host:port of /metrics. Default 127.0.0.1:61678. Empty
	// serves /metrics on the introspection listener instead.
	Address string `yaml:"address" desc:"host:port of /metrics (empty: on the introspection listener)"`
}

// Log configures logging.
type Log struct {
	// Level is debug, info, warn or error. Default "info".
	Level string `yaml:"level" desc:"debug, info, warn or error"`
	// Format is text or json. Default "text".
	Format string `yaml:"format" desc:"text or json"`
}

// CheckpointPath is Checkpoint, or ipamd.checkpoint in StateDir.
func (c Config) CheckpointPath() string {
	if c.Checkpoint != "" {
		return c.Checkpoint
	}
	return filepath.Join(c.StateDir, "ipamd.checkpoint")
}

// AdminSocketPath is Introspection.AdminSocket, or admin.sock in Socket's
// directory.
func (c Config) AdminSocketPath() string {
	if c.Introspection.AdminSocket != "" {
		return c.Introspection.AdminSocket
	}
	return filepath.Join(filepath.Dir(c.Socket), "admin.sock")
}

// DefaultConfig returns the configuration ipamd runs with when a field is
// set neither in the file nor in the environment.
func DefaultConfig() Config {
	return Config{
		Socket:    "/run/sandboxipam/ipamd.sock",
		StateDir:  "/var/lib/sandboxipam",
		Network:   "sandboxipam",
		IfName:    "eth0",
		Cooldown:  30 * time.Second,
		Reconcile: reconcileconf.DefaultSettings(),
		Runtime:   Runtime{Adapter: AdapterAuto, AutoMTLS: true},
		IPSource: IPSource{
			Pool: poolconf.DefaultConfig(),
			AWS:  awsconf.DefaultConfig(),
		},
		Introspection: Listener{Address: "127.0.0.1:61679"},
		Metrics:       Metrics{Address: "127.0.0.1:61678"},
		Alive:         aliveconf.DefaultConfig(),
		Log:           Log{Level: "info", Format: "text"},
		PodLinks:      PodLinks{HostVethPrefix: "sbx", PodWiring: PodWiringAuto},
		CNI:           CNI{PortMap: PortMapIPTables},
		Advanced:      defaultAdvanced(),
	}
}

// Values of podLinks.podWiring.
const (
	PodWiringAuto     = "auto"
	PodWiringPlugin   = "plugin"
	PodWiringIPAMOnly = "ipamOnly"
)

// PluginWiresEveryPod reports whether every attachment on ipamd's network
// is known to be wired by the sandboxipam plugin as the main plugin: set
// so by podLinks.podWiring, or, with "auto", because ipamd writes the conflist
// itself. Only then does a missing pod link prove that a pod holds no
// address, and only then is an ADD from the plugin as IPAM only refused.
func (c Config) PluginWiresEveryPod() bool {
	switch c.PodLinks.PodWiring {
	case PodWiringPlugin:
		return true
	case PodWiringAuto:
		return c.CNI.ConfListPath != ""
	}
	return false
}

// PodWiringReason says, for logs and errors, how PluginWiresEveryPod was
// decided.
func (c Config) PodWiringReason() string {
	switch {
	case c.PodLinks.PodWiring == PodWiringPlugin:
		return "podLinks.podWiring is plugin"
	case c.PodLinks.PodWiring == PodWiringIPAMOnly:
		return "podLinks.podWiring is ipamOnly"
	case c.CNI.ConfListPath != "":
		return "podLinks.podWiring is auto and ipamd writes the conflist (cni.confListPath)"
	}
	return "podLinks.podWiring is auto and cni.confListPath is empty, so ipamd does not know who wires the pods"
}

// IP source types.
const (
	SourceStatic  = "static"
	SourcePodCIDR = "podCIDR"
	SourcePool    = "pool"
	SourceAWS     = "aws"
)

// ErrInvalid wraps every validation failure, so callers can tell a bad
// config from an unreadable file.
var ErrInvalid = errors.New("invalid config")

// Load reads the YAML file at path over DefaultConfig, applies the
// IPAMD_* variables (and the aliases ApplyEnv accepts) found in environ
// (os.Environ's form), and validates the result. An empty path means defaults and environment only.
func Load(path string, environ []string) (Config, error) {
	cfg := DefaultConfig()
	if path != "" {
		data, err := os.ReadFile(path)
		if err != nil {
			return Config{}, fmt.Errorf("read config: %w", err)
		}
		if err := checkRenamed(data); err != nil {
			return Config{}, fmt.Errorf("config %s: %w", path, err)
		}
		if err := decodeYAML(path, data, &cfg); err != nil {
			return Config{}, err
		}
	}
	if err := ApplyEnv(&cfg, environ); err != nil {
		return Config{}, err
	}
	if err := cfg.Validate(); err != nil {
		return Config{}, err
	}
	return cfg, nil
}
