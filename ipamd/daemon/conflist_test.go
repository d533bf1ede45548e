package daemon

import (
	"testing"

	"github.com/containernetworking/cni/libcni"

	"github.com/sandboxipam/sandboxipam/ipamd/config"
)

// The conflist ipamd writes, byte for byte: sandboxipam, then portmap
// with the portMappings capability (so the runtime passes hostPorts) and
// the backend cni.portMap names; auto leaves the backend to portmap's
// probe, off chains nothing. libcni must load every one of them.
func TestConfListChainsPortMap(t *testing.T) {
	const socket = "/run/sandboxipam/ipamd.sock"
	head := "{\n  \"cniVersion\": \"1.0.0\",\n  \"name\": \"podnet\",\n  \"plugins\": [\n" +
		"    {\n      \"ipamdSocket\": \"/run/sandboxipam/ipamd.sock\",\n      \"type\": \"sandboxipam\"\n    }"
	portmap := func(backend string) string {
		s := ",\n    {\n"
		if backend != "" {
			s += "      \"backend\": \"" + backend + "\",\n"
		}
		return s + "      \"capabilities\": {\n        \"portMappings\": true\n      },\n      \"type\": \"portmap\"\n    }"
	}
	const tail = "\n  ]\n}\n"
	for _, tc := range []struct {
		portMap, want string
	}{
		{config.PortMapIPTables, head + portmap("iptables") + tail},
		{config.PortMapNFTables, head + portmap("nftables") + tail},
		{config.PortMapAuto, head + portmap("") + tail},
		{config.PortMapOff, head + tail},
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
			if list, err := libcni.ConfListFromBytes(got); err != nil || len(list.Plugins) == 0 {
				t.Fatalf("libcni does not load the conflist: %v", err)
			}
		})
	}
}

// The default config chains portmap with the iptables backend.
func TestDefaultConfListChainsIPTablesPortMap(t *testing.T) {
	if pm := portMapPlugin(config.DefaultConfig().CNI.PortMap); pm == nil || pm["backend"] != "iptables" {
		t.Fatalf("default portmap entry %v, want the iptables backend", pm)
	}
}
