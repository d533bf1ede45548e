package e2e_test

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/containernetworking/cni/pkg/types"
	current "github.com/containernetworking/cni/pkg/types/100"
	"github.com/vishvananda/netlink"

	"github.com/sandboxipam/sandboxipam/cni/internal/cnitest"
	"github.com/sandboxipam/sandboxipam/internal/testsupport"
	"github.com/sandboxipam/sandboxipam/ipamd/api/wire"
	"github.com/sandboxipam/sandboxipam/ipamd/datastore"
)

// TestLifecycleAgainstRealIPAMD is the runtime's view of one pod: ADD,
// CHECK, DEL, DEL again, with the address ipamd's datastore recorded.
func TestLifecycleAgainstRealIPAMD(t *testing.T) {
	testsupport.RequireRoot(t, "ip")
	ipamd := startIPAMD(t, "198.18.0.0/24", 30*time.Second)
	env := cnitest.NewPodEnv(t, ipamd.Socket)
	conf := cnitest.NetConf(ipamd.Socket, "1.1.0", "")

	add := env.Call(t, "ADD", conf)
	cnitest.MustSucceed(t, add, "ADD")
	held, ok := ipamd.Daemon.Store().Lookup(env.Key())
	if !ok {
		t.Fatalf("ipamd holds nothing for %v after ADD", env.Key())
	}
	var res current.Result
	if err := json.Unmarshal(add.Stdout, &res); err != nil {
		t.Fatalf("decode result: %v", err)
	}
	want := held.Address.IP.String() + "/32"
	if len(res.IPs) != 1 || res.IPs[0].Address.String() != want {
		t.Fatalf("result ips %s, want %s (ipamd's record)", add.Stdout, want)
	}
	assertPodAddress(t, env, held.Address.IP)

	cnitest.MustSucceed(t, env.Call(t, "CHECK", withPrevResult(t, conf, add.Stdout)), "CHECK")
	cnitest.MustSucceed(t, env.Call(t, "DEL", conf), "DEL")
	cnitest.MustSucceed(t, env.Call(t, "DEL", conf), "second DEL")
	if code := cnitest.CheckViaWire(t, ipamd.Socket, env.Key()); code != wire.CodeNotFound {
		t.Errorf("ipamd Check after DEL: code %d, want NotFound", code)
	}
}

func assertPodAddress(t *testing.T, env *cnitest.PodEnv, ip netip.Addr) {
	t.Helper()
	pod := cnitest.HandleIn(t, env.PodNS)
	link, err := pod.LinkByName("eth0")
	if err != nil {
		t.Fatalf("eth0 in the pod: %v", err)
	}
	addrs, err := pod.AddrList(link, netlink.FAMILY_V4)
	if err != nil || len(addrs) != 1 || addrs[0].IPNet.String() != ip.String()+"/32" {
		t.Errorf("eth0 addresses %v (%v), want %s/32", addrs, err, ip)
	}
	host := cnitest.HandleIn(t, env.HostNS)
	hostLink, err := host.LinkByName(env.HostVeth())
	if err != nil {
		t.Fatalf("host veth: %v", err)
	}
	routes, err := host.RouteList(hostLink, netlink.FAMILY_V4)
	if err != nil || len(routes) != 1 || routes[0].Dst.String() != ip.String()+"/32" {
		t.Errorf("host routes %v (%v), want %s/32", routes, err, ip)
	}
}

func withPrevResult(t *testing.T, conf, prev []byte) []byte {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(conf, &m); err != nil {
		t.Fatalf("decode config: %v", err)
	}
	m["prevResult"] = json.RawMessage(prev)
	out, err := json.Marshal(m)
	if err != nil {
		t.Fatalf("encode config: %v", err)
	}
	return out
}

func TestFailedAddReleasesAddressInRealIPAMD(t *testing.T) {
	testsupport.RequireRoot(t, "ip")
	ipamd := startIPAMD(t, "198.18.0.0/24", 30*time.Second)
	env := cnitest.NewPodEnv(t, ipamd.Socket)
	pod := cnitest.HandleIn(t, env.PodNS)
	taken := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: "eth0", TxQLen: -1}, PeerName: "taken0", PeerTxQLen: -1}
	if err := pod.LinkAdd(taken); err != nil {
		t.Fatalf("occupy eth0: %v", err)
	}
	o := env.Call(t, "ADD", cnitest.NetConf(ipamd.Socket, "1.1.0", ""))
	if o.Err == nil {
		t.Fatalf("ADD with eth0 taken succeeded")
	}
	if code := cnitest.CheckViaWire(t, ipamd.Socket, env.Key()); code != wire.CodeNotFound {
		t.Errorf("ipamd Check after the failed ADD: code %d, want NotFound", code)
	}
}

func TestGCAndStatusAgainstRealIPAMD(t *testing.T) {
	testsupport.RequireRoot(t, "ip")
	ipamd := startIPAMD(t, "198.18.0.0/24", 30*time.Second)
	env := cnitest.NewPodEnv(t, ipamd.Socket)
	ids := []string{cnitest.SandboxID("keep"), cnitest.SandboxID("drop")}
	for _, id := range ids {
		o := cnitest.Run(t, cnitest.Call{Command: "ADD", HostNetns: env.HostNS, SandboxID: id, IfName: "eth0",
			Netns: cnitest.NetnsPath(env.PodNS), Args: cnitest.PodArgs(id), Config: cnitest.IPAMConf(ipamd.Socket)})
		cnitest.MustSucceed(t, o, "IPAM ADD")
	}
	gc := fmt.Appendf(nil, `{"cniVersion":"1.1.0","name":"podnet","type":"sandboxipam","ipamdSocket":%q,`+
		`"cni.dev/valid-attachments":[{"containerID":%q,"ifname":"eth0"}]}`, ipamd.Socket, ids[0])
	cnitest.MustSucceed(t, cnitest.Run(t, cnitest.Call{Command: "GC", HostNetns: env.HostNS, Config: gc}), "GC")
	left := ipamd.Daemon.Store().Assignments()
	if len(left) != 1 || left[0].Key != (datastore.Key{Network: "podnet", SandboxID: ids[0], IfName: "eth0"}) {
		t.Errorf("assignments after GC: %v, want only the listed one", left)
	}

	status := fmt.Appendf(nil, `{"cniVersion":"1.1.0","name":"podnet","type":"sandboxipam","ipamdSocket":%q}`, ipamd.Socket)
	cnitest.MustSucceed(t, cnitest.Run(t, cnitest.Call{Command: "STATUS", HostNetns: env.HostNS, Config: status}), "STATUS")
	stopIPAMD(t, ipamd.Daemon)
	cnitest.MustFailWith(t, cnitest.Run(t, cnitest.Call{Command: "STATUS", HostNetns: env.HostNS, Config: status}),
		types.ErrPluginNotAvailable, "STATUS with ipamd stopped")
}
