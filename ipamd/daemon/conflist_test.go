package daemon

import (
	"encoding/json"
	"testing"

	"github.com/containernetworking/cni/libcni"

	"github.com/sandboxipam/sandboxipam/cni"
	"github.com/sandboxipam/sandboxipam/ipamd/config"
)

// The conflist ipamd writes, byte for byte: sandboxipam alone, with the
// portMappings capability (so the runtime passes hostPorts) and the
// portMap object naming the backend cni.portMap names; auto leaves the
// backend to portmap's probe, off declares no capability. libcni must load
// every one, and the plugin must read its portMap object back.
func TestConfListMapsPortsThroughThePlugin(t *testing.T) {
	const socket = "/run/sandboxipam/ipamd.sock"
	const head = "{\n  \"cniVersion\": \"1.0.0\",\n  \"name\": \"podnet\",\n  \"plugins\": [\n    {\n"
	const socketKey = "      \"ipamdSocket\": \"/run/sandboxipam/ipamd.sock\",\n"
	const tail = "      \"type\": \"sandboxipam\"\n    }\n  ]\n}\n"
	portMap := func(object string) string {
		return "      \"capabilities\": {\n        \"portMappings\": true\n      },\n" + socketKey + object
	}
	for _, tc := range []struct {
		portMap, want string
		wantMap       *cni.PortMap
	}{
		{config.PortMapIPTables, head + portMap("      \"portMap\": {\n        \"backend\": \"iptables\"\n      },\n") + tail, &cni.PortMap{Backend: "iptables"}},
		{config.PortMapNFTables, head + portMap("      \"portMap\": {\n        \"backend\": \"nftables\"\n      },\n") + tail, &cni.PortMap{Backend: "nftables"}},
		{config.PortMapAuto, head + portMap("      \"portMap\": {},\n") + tail, &cni.PortMap{}},
		{config.PortMapOff, head + socketKey + tail, nil},
	} {
		t.Run(tc.portMap, func(t *testing.T) {
			cfg := config.DefaultConfig()
			cfg.Network, cfg.Socket, cfg.CNI.PortMap = "podnet", socket, tc.portMap
			got, err := (&Daemon{cfg: cfg}).confList()
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Fatalf("conflist:\n%s\nwant:\n%s", got, tc.want)
			}
			list, err := libcni.ConfListFromBytes(got)
			if err != nil || len(list.Plugins) != 1 {
				t.Fatalf("libcni loads the conflist as %v (%v), want one plugin", list, err)
			}
			entry := list.Plugins[0].Bytes
			var withVersion map[string]any
			if err := json.Unmarshal(entry, &withVersion); err != nil {
				t.Fatal(err)
			}
			withVersion["cniVersion"], withVersion["name"] = list.CNIVersion, list.Name
			stdin, err := json.Marshal(withVersion)
			if err != nil {
				t.Fatal(err)
			}
			conf, err := cni.ParseConfig(stdin)
			if err != nil {
				t.Fatalf("the plugin refuses its entry %s: %v", stdin, err)
			}
			if (conf.PortMap == nil) != (tc.wantMap == nil) || conf.PortMap != nil && *conf.PortMap != *tc.wantMap {
				t.Fatalf("the plugin reads portMap %+v, want %+v", conf.PortMap, tc.wantMap)
			}
		})
	}
}

// The default config maps hostPorts with portmap's iptables backend.
func TestDefaultConfListMapsPortsWithIPTables(t *testing.T) {
	if pm := portMapSettings(config.DefaultConfig().CNI.PortMap); pm == nil || pm["backend"] != "iptables" {
		t.Fatalf("default portMap object %v, want the iptables backend", pm)
	}
}
