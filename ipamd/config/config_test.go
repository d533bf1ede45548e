package config

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/sandboxipam/sandboxipam/ipamd/aliveness/aliveconf"
	"github.com/sandboxipam/sandboxipam/ipamd/ipsource/aws/awsconf"
	"github.com/sandboxipam/sandboxipam/ipamd/ipsource/pool/poolconf"
	"github.com/sandboxipam/sandboxipam/ipamd/reconcile/reconcileconf"
	"github.com/sandboxipam/sandboxipam/runtime/plugin/pluginconf"
	"go.yaml.in/yaml/v3"
)

func TestLoadGoldenFullExample(t *testing.T) {
	got, err := Load(filepath.Join("testdata", "full.yaml"), nil)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	want := Config{
		Socket:     "/run/test/ipamd.sock",
		StateDir:   "/var/lib/test-ipam",
		Checkpoint: "/var/lib/test-ipam/state.ckpt",
		Network:    "podnet",
		IfName:     "net1",
		Cooldown:   5 * time.Second,
		Reconcile:  reconcileconf.Settings{Interval: 2 * time.Minute, Grace: 45 * time.Second},
		Runtime: Runtime{
			Adapter:   "containerd",
			Endpoint:  "unix:///run/k3s/containerd/containerd.sock",
			PluginDir: "/opt/sandboxipam/adapters",
			SHA256:    "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
			Args:      []string{"--timeout", "5s"},
			AutoMTLS:  false,
		},
		IPSource: IPSource{
			Type:     "static",
			NodeName: "node-7",
			PodCIDR:  PodCIDRSource{Kubeconfig: "/etc/kubernetes/ipamd.kubeconfig"},
			Pool: poolconf.Config{Pool: "pods-b", LowWatermark: 8, HighWatermark: 40, ReturnGrace: 90 * time.Second,
				Interval: 2 * time.Second, Kubeconfig: "/etc/kubernetes/pool.kubeconfig",
				Lease: poolconf.LeaseConfig{Namespace: "sandboxipam", RenewInterval: 5 * time.Second, FenceAfter: 90 * time.Second}},
			Static: Static{CIDRs: []string{"198.18.0.0/24", "198.19.0.0/28"}, Reserved: []string{"198.18.0.2"},
				Gateways: []string{"198.18.0.1", ""}},
			AWS: awsconf.Config{WarmIPTarget: 5, MinimumIPTarget: 10, WarmENITarget: 2, WarmPrefixTarget: 1, MaxENIs: 3,
				Region: "eu-west-1", EC2Endpoint: "http://127.0.0.1:8080", IMDSEndpoint: "http://127.0.0.1:8081"},
		},
		Introspection: Listener{Address: "127.0.0.1:7001", AdminSocket: "/run/test-admin/admin.sock"},
		Metrics:       Metrics{Address: ""},
		Alive:         aliveconf.Config{Hosts: []string{"10.0.0.7", "fd00::7"}, Port: 7002},
		Log:           Log{Level: "debug", Format: "json"},
		PodLinks:      PodLinks{HostVethPrefix: "pod", PodWiring: PodWiringPlugin},
		CNI:           CNI{ConfListPath: "/etc/cni/net.d/10-podnet.conflist", PortMap: PortMapNFTables},
		Routes:        Routes{Nodes: true},
		Advanced: Advanced{
			Adapter: AdapterTuning{StartTimeout: 20 * time.Second,
				Supervision: pluginconf.Supervision{MinBackoff: time.Second, MaxBackoff: time.Minute, HealthInterval: 10 * time.Second}},
			Reconcile: reconcileconf.Tuning{ListTimeout: 3 * time.Second, LinkGrace: 20 * time.Second},
			AWS: awsconf.Tuning{PoolCheckInterval: 2 * time.Second, ShrinkInterval: time.Minute, ResyncInterval: 5 * time.Minute,
				LeakedENICleanupInterval: time.Hour, MaxAttempts: 4, MaxBackoff: 5 * time.Second},
		},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Load(full.yaml) =\n%+v\nwant\n%+v", got, want)
	}
	if got.AdminSocketPath() != "/run/test-admin/admin.sock" {
		t.Errorf("AdminSocketPath = %q", got.AdminSocketPath())
	}
	if got.CheckpointPath() != "/var/lib/test-ipam/state.ckpt" {
		t.Errorf("CheckpointPath = %q", got.CheckpointPath())
	}
}

func TestExampleConfigIsDefaultAndValid(t *testing.T) {
	got, err := Load(filepath.Join("..", "..", "examples", "ipamd.yaml"), nil)
	if err != nil {
		t.Fatalf("examples/ipamd.yaml: %v", err)
	}
	// The example chooses the one thing without a default: the IP source.
	def := staticConfig()
	def.Runtime.Args = []string{}
	def.IPSource.Static.Reserved = []string{}
	def.IPSource.Static.Gateways = []string{}
	if !reflect.DeepEqual(got, def) {
		t.Errorf("examples/ipamd.yaml documents values that differ from DefaultConfig:\n%+v\nwant\n%+v", got, def)
	}
}

// staticConfig is DefaultConfig with the one choice it lacks made: the
// static source on one node's range.
func staticConfig() Config {
	cfg := DefaultConfig()
	cfg.IPSource.Type = SourceStatic
	cfg.IPSource.Static.CIDRs = []string{"198.18.0.0/24"}
	return cfg
}

// Every default validates; the IP source is the one choice DefaultConfig
// leaves to the operator, and Validate refuses it unmade, naming it.
func TestDefaultConfigValidatesButTheIPSource(t *testing.T) {
	cfg := DefaultConfig()
	want := "invalid config: ipSource.type must be chosen (env IPAMD_IPSOURCE_TYPE): static (CIDRs from ipSource.static.cidrs, " +
		"one node's, or per node from ipSource.static.nodes), podCIDR (the Node's spec.podCIDRs), pool (blocks claimed from an IPPool) " +
		"or aws (ENI secondary IPs); there is no default, because nodes given the same config would hand out the same addresses"
	if err := cfg.Validate(); err == nil || err.Error() != want || !errors.Is(err, ErrInvalid) {
		t.Fatalf("DefaultConfig().Validate() = %v\nwant %s", err, want)
	}
	if err := staticConfig().Validate(); err != nil {
		t.Fatalf("DefaultConfig() with a static source: Validate() = %v", err)
	}
	if cfg.CheckpointPath() != "/var/lib/sandboxipam/ipamd.checkpoint" {
		t.Errorf("CheckpointPath = %q", cfg.CheckpointPath())
	}
}

func TestLoadRejectsUnknownYAMLField(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(path, []byte("runtime:\n  adaptr: docker\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Load(path, nil)
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "adaptr") {
		t.Fatalf("Load = %v, want ErrInvalid naming adaptr", err)
	}
}

// adapterChoices is how the adapter table's names read in an error: the
// tests take them from the table, so a fifth adapter edits no test here.
var adapterChoices = strings.Join(AdapterNames(), ", ")

func TestValidateNamesFieldAndValue(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(*Config)
		want   string
	}{
		{"adapter", func(c *Config) { c.Runtime.Adapter = "x" },
			"runtime.adapter must be one of " + adapterChoices + `, auto or a path, got "x"`},
		{"adapter relative path", func(c *Config) { c.Runtime.Adapter = "./my-adapter" },
			`runtime.adapter must be an absolute path when it is a path, got "./my-adapter"`},
		{"socket empty", func(c *Config) { c.Socket = "" }, "socket must not be empty"},
		{"socket relative", func(c *Config) { c.Socket = "ipamd.sock" }, `socket must be an absolute path, got "ipamd.sock"`},
		{"socket long", func(c *Config) { c.Socket = "/" + strings.Repeat("s", 120) }, "socket must be at most 107 bytes"},
		{"stateDir", func(c *Config) { c.StateDir = "state" }, `stateDir must be an absolute path, got "state"`},
		{"checkpoint", func(c *Config) { c.Checkpoint = "ck" }, `checkpoint must be an absolute path, got "ck"`},
		{"network", func(c *Config) { c.Network = "" }, "network must not be empty"},
		{"ifName", func(c *Config) { c.IfName = "eth0/x" }, `ifName "eth0/x" contains '/'`},
		{"cooldown", func(c *Config) { c.Cooldown = -time.Second }, "cooldown must not be negative, got -1s"},
		{"interval", func(c *Config) { c.Reconcile.Interval = 0 }, "reconcile.interval must be positive, got 0s"},
		{"grace", func(c *Config) { c.Reconcile.Grace = -time.Second }, "reconcile.grace must be positive, got -1s"},
		{"listTimeout", func(c *Config) { c.Advanced.Reconcile.ListTimeout = 0 }, "advanced.reconcile.listTimeout must be positive, got 0s"},
		{"linkGrace", func(c *Config) { c.Advanced.Reconcile.LinkGrace = -time.Second }, "advanced.reconcile.linkGrace must be positive, got -1s"},
		{"endpoint with auto", func(c *Config) { c.Runtime.Endpoint = "unix:///run/x.sock" },
			`runtime.endpoint must be empty when runtime.adapter is auto (auto finds the socket), got "unix:///run/x.sock"`},
		{"endpoint", func(c *Config) { c.Runtime.Adapter = "crio"; c.Runtime.Endpoint = "containerd.sock" },
			`runtime.endpoint must be a URI such as unix:///run/containerd/containerd.sock or an absolute socket path, got "containerd.sock"`},
		{"pluginDir", func(c *Config) { c.Runtime.PluginDir = "bin" }, `runtime.pluginDir must be an absolute path, got "bin"`},
		{"sha256", func(c *Config) { c.Runtime.SHA256 = "abc" }, `runtime.sha256 must be 64 hex digits, got "abc"`},
		{"startTimeout", func(c *Config) { c.Advanced.Adapter.StartTimeout = 0 }, "advanced.adapter.startTimeout must be positive, got 0s"},
		{"minBackoff", func(c *Config) { c.Advanced.Adapter.MinBackoff = 0 }, "advanced.adapter.minBackoff must be positive, got 0s"},
		{"maxBackoff", func(c *Config) { c.Advanced.Adapter.MaxBackoff = time.Millisecond },
			"advanced.adapter.maxBackoff must be at least minBackoff (500ms), got 1ms"},
		{"healthInterval", func(c *Config) { c.Advanced.Adapter.HealthInterval = 0 }, "advanced.adapter.healthInterval must be positive, got 0s"},
		{"source type", func(c *Config) { c.IPSource.Type = "dhcp" }, `ipSource.type must be one of static, podCIDR, pool, aws, got "dhcp"`},
		{"routes without node name", func(c *Config) { c.Routes.Nodes = true },
			"ipSource.nodeName must be set when routes.nodes is true"},
		{"podCIDR without name", func(c *Config) { c.IPSource.Type = "podCIDR" },
			"ipSource.nodeName must be set when ipSource.type is podCIDR"},
		{"static nodes bad cidr", func(c *Config) {
			c.IPSource.NodeName = "node-1"
			c.IPSource.Static.Nodes = map[string][]string{"node-1": {"198.18.1.0/24"}, "node-2": {"198.18.2.0/33"}}
		}, `ipSource.static.nodes.node-2[0] must be a CIDR such as 198.18.0.0/24, got "198.18.2.0/33"`},
		{"static nodes overlap", func(c *Config) {
			c.IPSource.NodeName = "node-1"
			c.IPSource.Static.Nodes = map[string][]string{"node-1": {"198.18.0.0/16"}, "node-2": {"198.18.2.0/24"}}
		}, `ipSource.static.nodes.node-2[0] "198.18.2.0/24" overlaps ipSource.static.nodes.node-1[0] "198.18.0.0/16": two nodes would hand out the same addresses`},
		{"static nodes missing this node", func(c *Config) {
			c.IPSource.NodeName = "node-3"
			c.IPSource.Static.Nodes = map[string][]string{"node-1": {"198.18.1.0/24"}, "node-2": {"198.18.2.0/24"}}
		}, `ipSource.static.nodes has no entry for node "node-3" (ipSource.nodeName, NODE_NAME); it lists node-1, node-2`},
		{"static nodes without node name", func(c *Config) {
			c.IPSource.Static.Nodes = map[string][]string{"node-1": {"198.18.1.0/24"}}
		}, "ipSource.nodeName must be set when ipSource.static.nodes is"},
		{"static nodes with gateways", func(c *Config) {
			c.IPSource.NodeName = "node-1"
			c.IPSource.Static.Gateways = []string{"198.18.0.1"}
			c.IPSource.Static.Nodes = map[string][]string{"node-1": {"198.18.1.0/24"}}
		}, "ipSource.static.gateways must be empty when ipSource.static.nodes is set"},
		{"static nodes empty entry", func(c *Config) {
			c.IPSource.NodeName = "node-1"
			c.IPSource.Static.Nodes = map[string][]string{"node-1": {"198.18.1.0/24"}, "node-2": nil}
		}, "ipSource.static.nodes.node-2 must list at least one CIDR"},
		{"no cidrs", func(c *Config) { c.IPSource.Static.CIDRs = nil },
			"ipSource.static.cidrs must list at least one CIDR when ipSource.type is static"},
		{"bad cidr", func(c *Config) { c.IPSource.Static.CIDRs = []string{"198.18.0.0/24", "10.0.0.300/8"} },
			`ipSource.static.cidrs[1] must be a CIDR such as 198.18.0.0/24, got "10.0.0.300/8"`},
		{"host bits", func(c *Config) { c.IPSource.Static.CIDRs = []string{"198.18.0.5/24"} },
			`ipSource.static.cidrs[0] has host bits set, got "198.18.0.5/24" (did you mean 198.18.0.0/24?)`},
		{"reserved", func(c *Config) { c.IPSource.Static.Reserved = []string{"gw"} },
			`ipSource.static.reserved[0] must be an IP address, got "gw"`},
		{"reserved outside", func(c *Config) { c.IPSource.Static.Reserved = []string{"10.0.0.1"} }, "ipSource.static.reserved[0]"},
		{"warmIPTarget", func(c *Config) { c.IPSource.Type = "aws"; c.IPSource.AWS.WarmIPTarget = -1 }, "ipSource.aws.warmIPTarget must be >= 0, got -1"},
		{"aws targets", func(c *Config) { c.IPSource.Type = "aws"; c.IPSource.AWS.WarmENITarget = 0 },
			"ipSource.aws.warmIPTarget, aws.minimumIPTarget or aws.warmENITarget must be > 0"},
		{"ec2Endpoint", func(c *Config) { c.IPSource.Type = "aws"; c.IPSource.AWS.EC2Endpoint = "ec2.local" },
			`ipSource.aws.ec2Endpoint must be an http or https URL, got "ec2.local"`},
		{"introspection", func(c *Config) { c.Introspection.Address = "localhost" },
			`introspection.address must be host:port such as 127.0.0.1:61679, got "localhost"`},
		{"introspection empty", func(c *Config) { c.Introspection.Address = "" }, "introspection.address must not be empty"},
		{"adminSocket relative", func(c *Config) { c.Introspection.AdminSocket = "admin.sock" },
			`introspection.adminSocket must be an absolute path, got "admin.sock"`},
		{"adminSocket long", func(c *Config) { c.Introspection.AdminSocket = "/" + strings.Repeat("a", 120) },
			"introspection.adminSocket must be at most 107 bytes"},
		{"adminSocket derived long", func(c *Config) { c.Socket = "/" + strings.Repeat("s", 96) + "/i.sock" },
			"introspection.adminSocket must be at most 107 bytes"},
		{"adminSocket is the CNI socket", func(c *Config) { c.Introspection.AdminSocket = c.Socket },
			`introspection.adminSocket must differ from socket (the CNI socket), got "/run/sandboxipam/ipamd.sock"`},
		{"metrics", func(c *Config) { c.Metrics.Address = "127.0.0.1:99999" },
			`metrics.address must be host:port such as 127.0.0.1:61679, got "127.0.0.1:99999"`},
		{"log level", func(c *Config) { c.Log.Level = "trace" }, `log.level must be one of debug, info, warn, error, got "trace"`},
		{"log format", func(c *Config) { c.Log.Format = "xml" }, `log.format must be one of text, json, got "xml"`},
		{"pool name", func(c *Config) {
			c.IPSource.Type, c.IPSource.NodeName, c.IPSource.Pool.Pool = SourcePool, "n1", "Pods!"
		},
			`ipSource.pool.pool must name an IPPool (a lowercase DNS subdomain such as "default"), got "Pods!"`},
		{"pool watermarks", func(c *Config) {
			c.IPSource.Type, c.IPSource.NodeName, c.IPSource.Pool.HighWatermark = SourcePool, "n1", 16
		}, "ipSource.pool.highWatermark must be above lowWatermark (16), got 16"},
		{"pool low watermark", func(c *Config) {
			c.IPSource.Type, c.IPSource.NodeName, c.IPSource.Pool.LowWatermark = SourcePool, "n1", 0
		},
			"ipSource.pool.lowWatermark must be at least 1, got 0"},
		{"pool grace", func(c *Config) {
			c.IPSource.Type, c.IPSource.NodeName, c.IPSource.Pool.ReturnGrace = SourcePool, "n1", -time.Second
		}, "ipSource.pool.returnGrace must not be negative, got -1s"},
		{"pool interval", func(c *Config) { c.IPSource.Type, c.IPSource.NodeName, c.IPSource.Pool.Interval = SourcePool, "n1", 0 },
			"ipSource.pool.interval must be positive, got 0s"},
		{"pool node name", func(c *Config) { c.IPSource.Type = SourcePool },
			"ipSource.nodeName must be set when ipSource.type is pool"},
		{"podWiring", func(c *Config) { c.PodLinks.PodWiring = "true" }, `podLinks.podWiring must be one of auto, plugin, ipamOnly, got "true"`},
		{"portMap", func(c *Config) { c.CNI.PortMap = "yes" }, `cni.portMap must be one of iptables, nftables, auto, off, got "yes"`},
		{"podWiring ipamOnly with conflist", func(c *Config) {
			c.PodLinks.PodWiring = PodWiringIPAMOnly
			c.CNI.ConfListPath = "/etc/cni/net.d/10-sandboxipam.conflist"
		}, `podLinks.podWiring is ipamOnly, but cni.confListPath "/etc/cni/net.d/10-sandboxipam.conflist" makes ipamd write a conflist`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := staticConfig()
			tc.mutate(&cfg)
			err := cfg.Validate()
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("Validate() = %v, want ErrInvalid", err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Validate() = %q\nwant it to contain %q", err, tc.want)
			}
		})
	}
}

// static.nodes: each node serves its own entry, chosen by NODE_NAME;
// reserved addresses of other nodes' entries are left out, and the map
// can come from the environment too.
func TestStaticNodes(t *testing.T) {
	path := filepath.Join("testdata", "static-nodes.yaml")
	for _, tc := range []struct {
		node, cidrs, reserved string
	}{
		{"node-1", "198.18.1.0/24 fd00:1::/64", "198.18.1.1"},
		{"node-2", "198.18.2.0/24", ""},
	} {
		cfg, err := Load(path, []string{"NODE_NAME=" + tc.node})
		if err != nil {
			t.Fatalf("%s: %v", tc.node, err)
		}
		cidrs, reserved, gateways := cfg.IPSource.StaticPool()
		if strings.Join(cidrs, " ") != tc.cidrs || strings.Join(reserved, " ") != tc.reserved || gateways != nil {
			t.Errorf("%s: StaticPool = %v %v %v, want %s / %s", tc.node, cidrs, reserved, gateways, tc.cidrs, tc.reserved)
		}
	}
	_, err := Load(path, []string{"NODE_NAME=node-9"})
	if err == nil || !strings.Contains(err.Error(), `ipSource.static.nodes has no entry for node "node-9"`) {
		t.Errorf("Load for a node not in the map = %v", err)
	}
	cfg, err := Load("", []string{"NODE_NAME=b", "IPAMD_IPSOURCE_TYPE=static", "IPAMD_IPSOURCE_STATIC_NODES=a=198.18.1.0/24,b=198.18.2.0/24 fd00:2::/64"})
	if err != nil {
		t.Fatal(err)
	}
	if cidrs, _, _ := cfg.IPSource.StaticPool(); strings.Join(cidrs, " ") != "198.18.2.0/24 fd00:2::/64" {
		t.Errorf("from the environment: %v", cidrs)
	}
	if _, err := Load("", []string{"IPAMD_IPSOURCE_STATIC_NODES=198.18.1.0/24"}); err == nil || !strings.Contains(err.Error(), "IPAMD_IPSOURCE_STATIC_NODES") {
		t.Errorf("a malformed map = %v", err)
	}
}

// The no-link inference is earned: only an explicit "plugin", or "auto"
// with ipamd writing the conflist itself, says the plugin wires every pod.
func TestPluginWiresEveryPod(t *testing.T) {
	cases := []struct {
		wiring, confList string
		want             bool
	}{
		{PodWiringAuto, "", false},
		{PodWiringAuto, "/etc/cni/net.d/10-sandboxipam.conflist", true},
		{PodWiringPlugin, "", true},
		{PodWiringIPAMOnly, "", false},
	}
	for _, tc := range cases {
		cfg := DefaultConfig()
		cfg.PodLinks.PodWiring, cfg.CNI.ConfListPath = tc.wiring, tc.confList
		if got := cfg.PluginWiresEveryPod(); got != tc.want {
			t.Errorf("podWiring %q, confListPath %q: PluginWiresEveryPod() = %v, want %v (%s)", tc.wiring, tc.confList, got, tc.want, cfg.PodWiringReason())
		}
	}
	if DefaultConfig().PluginWiresEveryPod() {
		t.Error("the default config infers from a missing pod link; the safe default is not to")
	}
}

func TestValidateReportsEveryProblem(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Network = ""
	cfg.Log.Level = "loud"
	err := cfg.Validate()
	for _, want := range []string{"network must not be empty", `log.level must be one of debug, info, warn, error, got "loud"`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate() = %v, want it to contain %q", err, want)
		}
	}
}

func TestEnvOverridesEveryKind(t *testing.T) {
	path := filepath.Join("testdata", "full.yaml")
	env := []string{
		"PATH=/usr/bin",
		"IPAMD_RUNTIME_ENDPOINT=unix:///run/other.sock", // full.yaml names containerd
		"IPAMD_RUNTIME_ARGS=--timeout, 9s",
		"IPAMD_RUNTIME_AUTOMTLS=true",
		"IPAMD_RECONCILE_GRACE=1s",
		"IPAMD_IPSOURCE_STATIC_CIDRS=10.1.0.0/16",
		"IPAMD_IPSOURCE_STATIC_RESERVED=10.1.0.9",
		"IPAMD_IPSOURCE_STATIC_GATEWAYS=",
		"IPAMD_IPSOURCE_AWS_WARMIPTARGET=7",
		"IPAMD_NETWORK=envnet",
	}
	cfg, err := Load(path, env)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if cfg.Runtime.Endpoint != "unix:///run/other.sock" || cfg.Network != "envnet" {
		t.Errorf("string overrides: endpoint %q network %q", cfg.Runtime.Endpoint, cfg.Network)
	}
	if !reflect.DeepEqual(cfg.Runtime.Args, []string{"--timeout", "9s"}) {
		t.Errorf("Args = %q", cfg.Runtime.Args)
	}
	if !cfg.Runtime.AutoMTLS || cfg.Reconcile.Grace != time.Second || cfg.IPSource.AWS.WarmIPTarget != 7 {
		t.Errorf("bool/duration/int overrides: %v %v %v", cfg.Runtime.AutoMTLS, cfg.Reconcile.Grace, cfg.IPSource.AWS.WarmIPTarget)
	}
	if !reflect.DeepEqual(cfg.IPSource.Static.CIDRs, []string{"10.1.0.0/16"}) {
		t.Errorf("CIDRs = %q", cfg.IPSource.Static.CIDRs)
	}
}

func TestEveryFieldHasADistinctEnvVar(t *testing.T) {
	seen := map[string]string{}
	for _, f := range Reference() {
		if f.Desc == "" {
			t.Errorf("%s has no desc tag", f.Path)
		}
		if other, dup := seen[f.Env]; dup {
			t.Errorf("%s and %s share %s", f.Path, other, f.Env)
		}
		seen[f.Env] = f.Path
		if f.Alias != "" {
			if other, dup := seen[f.Alias]; dup || strings.HasPrefix(f.Alias, EnvPrefix) {
				t.Errorf("alias %s of %s: taken by %q, or starts with %s", f.Alias, f.Path, other, EnvPrefix)
			}
			seen[f.Alias] = f.Path
		}
		cfg := DefaultConfig()
		if err := ApplyEnv(&cfg, []string{f.Env + "=" + f.Default}); err != nil {
			t.Errorf("%s=%q (its own default): %v", f.Env, f.Default, err)
		}
	}
	if len(seen) < 30 {
		t.Errorf("Reference lists %d fields, want every leaf (>= 30)", len(seen))
	}
}

func TestBadEnvValueNamesVariable(t *testing.T) {
	cases := map[string]string{
		"IPAMD_COOLDOWN=soon":                  "environment variable IPAMD_COOLDOWN (cooldown): want a duration such as 30s, got \"soon\"",
		"IPAMD_RUNTIME_AUTOMTLS=maybe":         "environment variable IPAMD_RUNTIME_AUTOMTLS (runtime.autoMTLS): want true or false, got \"maybe\"",
		"IPAMD_IPSOURCE_AWS_WARMENITARGET=two": "environment variable IPAMD_IPSOURCE_AWS_WARMENITARGET (ipSource.aws.warmENITarget): want an integer, got \"two\"",
		"IPAMD_RUNTIME_ADAPTOR=docker":         "environment variable IPAMD_RUNTIME_ADAPTOR names no config field",
		"IPAMD_RUNTIME_ADAPTER=podman":         "runtime.adapter must be one of " + adapterChoices + `, auto or a path, got "podman"`,
	}
	for kv, want := range cases {
		_, err := Load("", []string{kv})
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), want) {
			t.Errorf("Load with %s = %v\nwant ErrInvalid containing %q", kv, err, want)
		}
	}
}

func TestLoadNamesWhatReplacedARenamedField(t *testing.T) {
	cases := map[string]string{
		"node:\n  ipamOnly: true\n": "node.ipamOnly was replaced by podLinks.podWiring",
		"runtime:\n  adapter: docker\n  minBackoff: 1s\n  healthInterval: 2s\n": "runtime.healthInterval: moved to advanced.adapter.healthInterval " +
			"(env IPAMD_ADVANCED_ADAPTER_HEALTHINTERVAL); runtime.minBackoff: moved to advanced.adapter.minBackoff (env IPAMD_ADVANCED_ADAPTER_MINBACKOFF)",
		"runtime:\n  startTimeout: 1s\n": "runtime.startTimeout: moved to advanced.adapter.startTimeout",
		"runtime:\n  maxBackoff: 1m\n":   "runtime.maxBackoff: moved to advanced.adapter.maxBackoff",
		"ipSource:\n  aws:\n    warmIPTarget: 3\n    resyncInterval: 2m\n": "ipSource.aws.resyncInterval: moved to advanced.aws.resyncInterval " +
			"(env IPAMD_ADVANCED_AWS_RESYNCINTERVAL)",
		"reconcile:\n  grace: 1m\n  listTimeout: 5s\n": "reconcile.listTimeout: moved to advanced.reconcile.listTimeout " +
			"(env IPAMD_ADVANCED_RECONCILE_LISTTIMEOUT)",
		"node:\n  podWiring: plugin\n  linkGrace: 20s\n": "node.linkGrace: moved to advanced.reconcile.linkGrace " +
			"(env IPAMD_ADVANCED_RECONCILE_LINKGRACE); node.podWiring: moved to podLinks.podWiring (env IPAMD_PODLINKS_PODWIRING)",
		"node:\n  hostVethPrefix: sbx\n  netNS: /run/netns/x\n": "node.hostVethPrefix: moved to podLinks.hostVethPrefix " +
			"(env IPAMD_PODLINKS_HOSTVETHPREFIX); node.netNS: moved to podLinks.netNS (env IPAMD_PODLINKS_NETNS)",
		"node: {}\n": "node: renamed podLinks",
		"ipSource:\n  type: podCIDR\n  nodeName: n\n  node:\n    kubeconfig: /k\n": "ipSource.node.kubeconfig: moved to " +
			"ipSource.podCIDR.kubeconfig (env IPAMD_IPSOURCE_PODCIDR_KUBECONFIG)",
		"ipSource:\n  type: node\n  nodeName: n\n": `ipSource.type "node" was renamed "podCIDR"`,
	}
	for yaml, want := range cases {
		path := filepath.Join(t.TempDir(), "ipamd.yaml")
		if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := Load(path, nil)
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), want) {
			t.Errorf("Load(%q) = %v; want ErrInvalid containing %q", yaml, err, want)
		}
	}
	// The same keys in the new place load.
	path := filepath.Join(t.TempDir(), "ipamd.yaml")
	if err := os.WriteFile(path, []byte("advanced:\n  adapter:\n    minBackoff: 1s\n  reconcile:\n    linkGrace: 20s\n"+
		"ipSource:\n  type: static\n  static:\n    cidrs: [198.18.0.0/24]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if cfg, err := Load(path, nil); err != nil || cfg.Advanced.Adapter.MinBackoff != time.Second || cfg.Advanced.Reconcile.LinkGrace != 20*time.Second {
		t.Errorf("advanced.adapter.minBackoff, advanced.reconcile.linkGrace: %v, %v, %v",
			cfg.Advanced.Adapter.MinBackoff, cfg.Advanced.Reconcile.LinkGrace, err)
	}
}

func TestOldEnvVariableNamesItsNewPlace(t *testing.T) {
	for _, tc := range []struct{ old, path, env string }{
		{"IPAMD_RUNTIME_MINBACKOFF", "runtime.minBackoff", "advanced.adapter.minBackoff (env IPAMD_ADVANCED_ADAPTER_MINBACKOFF)"},
		{"IPAMD_RECONCILE_LISTTIMEOUT", "reconcile.listTimeout", "advanced.reconcile.listTimeout (env IPAMD_ADVANCED_RECONCILE_LISTTIMEOUT)"},
		{"IPAMD_NODE_LINKGRACE", "node.linkGrace", "advanced.reconcile.linkGrace (env IPAMD_ADVANCED_RECONCILE_LINKGRACE)"},
		{"IPAMD_NODE_PODWIRING", "node.podWiring", "podLinks.podWiring (env IPAMD_PODLINKS_PODWIRING)"},
		{"IPAMD_NODE_HOSTVETHPREFIX", "node.hostVethPrefix", "podLinks.hostVethPrefix (env IPAMD_PODLINKS_HOSTVETHPREFIX)"},
		{"IPAMD_IPSOURCE_NODE_KUBECONFIG", "ipSource.node.kubeconfig", "ipSource.podCIDR.kubeconfig (env IPAMD_IPSOURCE_PODCIDR_KUBECONFIG)"},
	} {
		_, err := Load("", []string{tc.old + "=1s"})
		want := "environment variable " + tc.old + " names no config field (" + tc.path + " moved to " + tc.env + ")"
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), want) {
			t.Errorf("Load = %v; want ErrInvalid containing %q", err, want)
		}
	}
	_, err := Load("", []string{"IPAMD_IPSOURCE_TYPE=node", "IPAMD_IPSOURCE_NODENAME=n"})
	if want := `ipSource.type "node" was renamed "podCIDR"`; !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), want) {
		t.Errorf("IPAMD_IPSOURCE_TYPE=node: %v; want ErrInvalid containing %q", err, want)
	}
	cfg, err := Load("", []string{"IPAMD_IPSOURCE_TYPE=podCIDR", "NODE_NAME=n", "IPAMD_ADVANCED_ADAPTER_MINBACKOFF=1s", "IPAMD_ADVANCED_RECONCILE_LISTTIMEOUT=2s", "IPAMD_ADVANCED_RECONCILE_LINKGRACE=3s"})
	if err != nil || cfg.Advanced.Adapter.MinBackoff != time.Second ||
		cfg.Advanced.Reconcile != (reconcileconf.Tuning{ListTimeout: 2 * time.Second, LinkGrace: 3 * time.Second}) {
		t.Fatalf("IPAMD_ADVANCED_*: %+v, %+v, %v", cfg.Advanced.Adapter, cfg.Advanced.Reconcile, err)
	}
}

// Config composes the components' own parts: their defaults are the
// components' defaults, not copies.
func TestDefaultsAreTheComponentsOwn(t *testing.T) {
	def := DefaultConfig()
	if def.Reconcile != reconcileconf.DefaultSettings() {
		t.Errorf("reconcile = %+v, want reconcileconf.DefaultSettings() %+v", def.Reconcile, reconcileconf.DefaultSettings())
	}
	if def.Advanced.Reconcile != reconcileconf.DefaultTuning() {
		t.Errorf("advanced.reconcile = %+v, want reconcileconf.DefaultTuning() %+v", def.Advanced.Reconcile, reconcileconf.DefaultTuning())
	}
	if def.IPSource.AWS != awsconf.DefaultConfig() {
		t.Errorf("ipSource.aws = %+v, want awsconf.DefaultConfig() %+v", def.IPSource.AWS, awsconf.DefaultConfig())
	}
	if def.Advanced.AWS != awsconf.DefaultTuning() {
		t.Errorf("advanced.aws = %+v, want awsconf.DefaultTuning() %+v", def.Advanced.AWS, awsconf.DefaultTuning())
	}
	if def.Advanced.Adapter.Supervision != pluginconf.DefaultSupervision() || def.Advanced.Adapter.StartTimeout != pluginconf.DefaultStartTimeout {
		t.Errorf("advanced.adapter = %+v, want plugin's defaults", def.Advanced.Adapter)
	}
}

// The tests that run the real binary write their Config as YAML: every
// part, the components' embedded ones included, must read back the same.
func TestConfigRoundTripsThroughYAML(t *testing.T) {
	want, err := Load(filepath.Join("testdata", "full.yaml"), nil)
	if err != nil {
		t.Fatal(err)
	}
	data, err := yaml.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	got := DefaultConfig()
	if err := decodeYAML("marshalled", data, &got); err != nil {
		t.Fatalf("decode what Marshal wrote: %v\n%s", err, data)
	}
	// An empty map comes back empty, not nil: not a difference.
	if len(got.IPSource.Static.Nodes) == 0 && len(want.IPSource.Static.Nodes) == 0 {
		got.IPSource.Static.Nodes = want.IPSource.Static.Nodes
	}
	gv, wv := reflect.ValueOf(got), reflect.ValueOf(want)
	for i := range gv.NumField() {
		if !reflect.DeepEqual(gv.Field(i).Interface(), wv.Field(i).Interface()) {
			t.Errorf("%s after the round trip = %+v, want %+v", gv.Type().Field(i).Name, gv.Field(i), wv.Field(i))
		}
	}
}
