package cni_test

import (
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/containernetworking/cni/pkg/types"

	"github.com/sandboxipam/sandboxipam/cni"
	"github.com/sandboxipam/sandboxipam/cni/internal/cnitest"
)

func TestParseConfigFillsDefaults(t *testing.T) {
	conf, err := cni.ParseConfig([]byte(`{"cniVersion":"1.1.0","name":"podnet","type":"sandboxipam"}`))
	if err != nil {
		t.Fatalf("ParseConfig: %v", err)
	}
	if conf.IPAMMode || conf.IPAMDSocket != cni.DefaultIPAMDSocket || conf.HostVethPrefix != cni.DefaultHostVethPrefix ||
		time.Duration(conf.Timeout) != cni.DefaultTimeout || conf.MTU != 0 {
		t.Errorf("defaults: %+v", conf.Settings)
	}
}

// TestParseConfigGoldenConflist loads the conflist documented for
// containerd's CNI conf_dir, as libcni would hand the plugin its entry.
func TestParseConfigGoldenConflist(t *testing.T) {
	raw, err := os.ReadFile("testdata/10-sandboxipam.conflist")
	if err != nil {
		t.Fatal(err)
	}
	var list struct {
		CNIVersion string            `json:"cniVersion"`
		Name       string            `json:"name"`
		Plugins    []json.RawMessage `json:"plugins"`
	}
	if err := json.Unmarshal(raw, &list); err != nil {
		t.Fatalf("decode conflist: %v", err)
	}
	var entry map[string]any
	if err := json.Unmarshal(list.Plugins[0], &entry); err != nil {
		t.Fatal(err)
	}
	entry["cniVersion"], entry["name"] = list.CNIVersion, list.Name
	stdin, _ := json.Marshal(entry)
	conf, err := cni.ParseConfig(stdin)
	if err != nil {
		t.Fatalf("ParseConfig: %v", err)
	}
	want := cni.Settings{IPAMDSocket: "/run/sandboxipam/ipamd.sock", MTU: 1450, HostVethPrefix: "sbx", Timeout: cni.Duration(5 * time.Second)}
	if conf.IPAMMode || conf.Name != "podnet" || conf.CNIVersion != "1.0.0" || conf.IPAMDSocket != want.IPAMDSocket ||
		conf.MTU != want.MTU || conf.HostVethPrefix != want.HostVethPrefix || conf.Timeout != want.Timeout {
		t.Errorf("parsed %+v, want %+v", conf.Settings, want)
	}
}

func TestParseConfigIPAMModeReadsIPAMSection(t *testing.T) {
	raw, err := os.ReadFile("testdata/bridge-ipam.conf")
	if err != nil {
		t.Fatal(err)
	}
	conf, err := cni.ParseConfig(raw)
	if err != nil {
		t.Fatalf("ParseConfig: %v", err)
	}
	if !conf.IPAMMode || conf.Timeout != cni.Duration(2*time.Second) || len(conf.Routes) != 1 || conf.Routes[0].Dst.String() != "0.0.0.0/0" {
		t.Errorf("IPAM mode config: mode %v, %+v", conf.IPAMMode, conf.Settings)
	}
}

func TestParseConfigRejects(t *testing.T) {
	cases := map[string]struct {
		json string
		code uint
		says string
	}{
		"malformed":       {`{"name":`, types.ErrDecodingFailure, "decode"},
		"no name":         {`{"type":"sandboxipam"}`, types.ErrInvalidNetworkConfig, "name"},
		"negative mtu":    {`{"name":"n","mtu":-5}`, types.ErrInvalidNetworkConfig, "mtu"},
		"long prefix":     {`{"name":"n","hostVethPrefix":"abcdefgh"}`, types.ErrInvalidNetworkConfig, "hostVethPrefix"},
		"prefix char":     {`{"name":"n","hostVethPrefix":"a/b"}`, types.ErrInvalidNetworkConfig, "hostVethPrefix"},
		"bad timeout":     {`{"name":"n","timeout":"soon"}`, types.ErrDecodingFailure, "timeout"},
		"negative wait":   {`{"name":"n","timeout":"-1s"}`, types.ErrInvalidNetworkConfig, "timeout"},
		"relative socket": {`{"name":"n","ipamdSocket":"x.sock"}`, types.ErrInvalidNetworkConfig, "ipamdSocket"},
		"portMap backend": {`{"name":"n","type":"sandboxipam","portMap":{"backend":"ipvs"}}`, types.ErrInvalidNetworkConfig, `portMap.backend must be iptables, nftables or left out (portmap probes), got "ipvs"`},
		"portMap in IPAM": {`{"name":"n","type":"bridge","ipam":{"type":"sandboxipam","portMap":{}}}`, types.ErrInvalidNetworkConfig, "portMap belongs to the main plugin"},
		"port mappings":   {`{"name":"n","type":"sandboxipam","runtimeConfig":{"portMappings":{}}}`, types.ErrDecodingFailure, "portMappings"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := cni.ParseConfig([]byte(tc.json))
			var cniErr *types.Error
			if !errors.As(err, &cniErr) || cniErr.Code != tc.code {
				t.Fatalf("ParseConfig(%s) = %v, want CNI code %d", tc.json, err, tc.code)
			}
			if !strings.Contains(cniErr.Msg+cniErr.Details, tc.says) {
				t.Errorf("error %q does not name %q", cniErr.Msg+": "+cniErr.Details, tc.says)
			}
		})
	}
}

// The runtime's port mappings are read only to be passed on: each entry
// as it came, and portmap runs only with a portMap object and a mapping.
func TestParseConfigReadsPortMappings(t *testing.T) {
	for _, tc := range []struct {
		json     string
		mappings int
		mapsPort bool
	}{
		{`{"name":"n","type":"sandboxipam","portMap":{"backend":"nftables"},"runtimeConfig":{"portMappings":[{"hostPort":8080,"containerPort":80,"protocol":"tcp"}]}}`, 1, true},
		{`{"name":"n","type":"sandboxipam","portMap":{},"runtimeConfig":{"portMappings":[]}}`, 0, false},
		{`{"name":"n","type":"sandboxipam","portMap":{}}`, 0, false},
		{`{"name":"n","type":"sandboxipam","runtimeConfig":{"portMappings":[{"hostPort":8080,"containerPort":80}]}}`, 1, false},
	} {
		conf, err := cni.ParseConfig([]byte(tc.json))
		if err != nil {
			t.Fatalf("ParseConfig(%s): %v", tc.json, err)
		}
		if got := len(conf.RuntimeConfig.PortMappings); got != tc.mappings {
			t.Errorf("ParseConfig(%s): %d port mappings, want %d", tc.json, got, tc.mappings)
		}
		if got := conf.PortMap != nil && len(conf.RuntimeConfig.PortMappings) > 0; got != tc.mapsPort {
			t.Errorf("ParseConfig(%s): runs portmap %v, want %v", tc.json, got, tc.mapsPort)
		}
	}
}

func TestParseArgsReadsPodIdentity(t *testing.T) {
	id := cnitest.SandboxID("args")
	a, err := cni.ParseArgs(id, "eth0", "/run/netns/x", cnitest.PodArgs(id)+";K8S_POD_NETWORK=ignored")
	if err != nil {
		t.Fatalf("ParseArgs: %v", err)
	}
	want := cni.PodRef{Name: "web-0", Namespace: "default", UID: "0f8e5c3a-1111-4c2b-9a53-3f1c8a7d2e10"}
	if a.Pod != want || a.InfraContainerID != id || a.SandboxID != id || a.IfName != "eth0" {
		t.Errorf("ParseArgs = %+v", a)
	}
	if err := a.ValidateForAdd(); err != nil {
		t.Errorf("ValidateForAdd: %v", err)
	}
}

func TestHostVethName(t *testing.T) {
	id := cnitest.SandboxID("veth")
	name := cni.HostVethName("sbx", id, "eth0")
	if len(name) != 15 || !strings.HasPrefix(name, "sbx") {
		t.Errorf("HostVethName = %q, want 15 characters starting with sbx", name)
	}
	if name != cni.HostVethName("sbx", id, "eth0") || name == cni.HostVethName("sbx", id, "eth1") {
		t.Errorf("HostVethName is not a function of sandbox ID and ifname")
	}
	if got := cni.HostVethName("", id, "eth0"); len(got) != 15 {
		t.Errorf("HostVethName without prefix = %q", got)
	}
}

func FuzzParseConfig(f *testing.F) {
	f.Add([]byte(`{"cniVersion":"1.1.0","name":"podnet","type":"sandboxipam"}`))
	f.Add([]byte(`{"cniVersion":"1.0.0","name":"podnet","type":"sandboxipam","capabilities":{"portMappings":true},"portMap":{"backend":"iptables"},` +
		`"runtimeConfig":{"portMappings":[{"hostPort":8080,"containerPort":80,"protocol":"tcp"}]}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		conf, err := cni.ParseConfig(data)
		if err != nil {
			var cniErr *types.Error
			if !errors.As(err, &cniErr) || (cniErr.Code != types.ErrDecodingFailure && cniErr.Code != types.ErrInvalidNetworkConfig) {
				t.Fatalf("error %v is not a decoding or config CNI error", err)
			}
			return
		}
		if err := conf.Validate(); err != nil {
			t.Fatalf("accepted config fails Validate: %v", err)
		}
		if len(cni.HostVethName(conf.HostVethPrefix, "id", "eth0")) != 15 || conf.Timeout <= 0 || conf.IPAMDSocket[0] != '/' {
			t.Fatalf("accepted config breaks invariants: %+v", conf.Settings)
		}
		if pm := conf.PortMap; pm != nil && (conf.IPAMMode || pm.Backend != "" && pm.Backend != cni.PortMapIPTables && pm.Backend != cni.PortMapNFTables) {
			t.Fatalf("accepted portMap %+v (IPAM mode %v)", *pm, conf.IPAMMode)
		}
	})
}

func FuzzParseArgs(f *testing.F) {
	f.Add("0123abcd", "eth0", "K8S_POD_NAME=a;K8S_POD_NAMESPACE=b")
	f.Fuzz(func(t *testing.T, id, ifName, cniArgs string) {
		a, err := cni.ParseArgs(id, ifName, "/run/netns/x", cniArgs)
		if err != nil {
			var cniErr *types.Error
			if !errors.As(err, &cniErr) || cniErr.Code == 0 {
				t.Fatalf("error %v is not a CNI error with a code", err)
			}
			return
		}
		if len(ifName) > 15 || strings.ContainsAny(ifName, "/: ") {
			t.Fatalf("accepted interface name %q", ifName)
		}
		if strings.Contains(a.Pod.Name, ";") || strings.Contains(a.Pod.Namespace, ";") {
			t.Fatalf("a value swallowed a separator: %+v", a.Pod)
		}
		if a.ValidateForAdd() == nil && (a.Pod.Name == "" || (a.InfraContainerID != "" && a.InfraContainerID != id)) {
			t.Fatalf("ValidateForAdd accepted %+v", a)
		}
	})
}
