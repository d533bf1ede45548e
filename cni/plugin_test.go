package cni_test

import (
	"encoding/json"
	"net"
	"net/netip"
	"testing"

	"github.com/containernetworking/cni/pkg/types"
	current "github.com/containernetworking/cni/pkg/types/100"
	"github.com/vishvananda/netlink"

	"github.com/sandboxipam/sandboxipam/cni"
	"github.com/sandboxipam/sandboxipam/cni/internal/cnitest"
	"github.com/sandboxipam/sandboxipam/internal/testsupport"
	"github.com/sandboxipam/sandboxipam/ipamd/api/wire"
	"github.com/sandboxipam/sandboxipam/ipamd/datastore"
)

// wireEnv is a pod env whose ipamd is the test wire server.
type wireEnv struct {
	*cnitest.PodEnv
	IPAMD *cnitest.IPAMD
}

func newPodEnv(t *testing.T) *wireEnv {
	t.Helper()
	testsupport.RequireRoot(t, "ip")
	ipamd := cnitest.StartWireIPAMD(t, 16)
	return &wireEnv{PodEnv: cnitest.NewPodEnv(t, ipamd.Socket), IPAMD: ipamd}
}

func TestAddWiresPodWithAddressFromIPAMD(t *testing.T) {
	env := newPodEnv(t)
	o := env.Call(t, "ADD", cnitest.NetConf(env.IPAMD.Socket, "1.1.0", ""))
	cnitest.MustSucceed(t, o, "ADD")

	held, ok := env.IPAMD.Store.Lookup(env.Key())
	if !ok || held.Address.IP != cnitest.FirstPoolIP {
		t.Fatalf("ipamd holds %v (found %v), want %s", held.Address.IP, ok, cnitest.FirstPoolIP)
	}
	if held.Wiring != datastore.WiringMainPlugin {
		t.Errorf("ipamd recorded wiring %q, want %q: the plugin must say it wires the pod", held.Wiring, datastore.WiringMainPlugin)
	}
	assertResult(t, o.Stdout, env)
	assertPodSide(t, env, cnitest.FirstPoolIP)
	assertHostSide(t, env, cnitest.FirstPoolIP)
}

func assertResult(t *testing.T, stdout []byte, env *wireEnv) {
	t.Helper()
	var res current.Result
	if err := json.Unmarshal(stdout, &res); err != nil {
		t.Fatalf("decode result %s: %v", stdout, err)
	}
	if res.CNIVersion != "1.1.0" {
		t.Errorf("result cniVersion %q, want 1.1.0", res.CNIVersion)
	}
	if len(res.Interfaces) != 2 || res.Interfaces[0].Name != env.HostVeth() || res.Interfaces[0].Mac != "ee:ee:ee:ee:ee:ee" ||
		res.Interfaces[1].Name != "eth0" || res.Interfaces[1].Sandbox != cnitest.NetnsPath(env.PodNS) {
		t.Errorf("result interfaces %s, want host veth %s and eth0 in %s", stdout, env.HostVeth(), cnitest.NetnsPath(env.PodNS))
	}
	if len(res.IPs) != 1 || res.IPs[0].Address.String() != "198.18.0.10/32" || res.IPs[0].Gateway.String() != "169.254.1.1" ||
		res.IPs[0].Interface == nil || *res.IPs[0].Interface != 1 {
		t.Errorf("result ips %s, want 198.18.0.10/32 via 169.254.1.1 on interface 1", stdout)
	}
	if len(res.Routes) != 1 || res.Routes[0].Dst.String() != "0.0.0.0/0" || res.Routes[0].GW.String() != "169.254.1.1" {
		t.Errorf("result routes %s, want 0.0.0.0/0 via 169.254.1.1", stdout)
	}
}

func assertPodSide(t *testing.T, env *wireEnv, ip netip.Addr) {
	t.Helper()
	pod := cnitest.HandleIn(t, env.PodNS)
	link, err := pod.LinkByName("eth0")
	if err != nil {
		t.Fatalf("eth0 in the pod: %v", err)
	}
	if link.Type() != "veth" || link.Attrs().MTU != 1400 || link.Attrs().Flags&net.FlagUp == 0 {
		t.Errorf("eth0 is %s, mtu %d, flags %v; want an up veth with mtu 1400", link.Type(), link.Attrs().MTU, link.Attrs().Flags)
	}
	addrs, err := pod.AddrList(link, netlink.FAMILY_V4)
	if err != nil || len(addrs) != 1 || addrs[0].IPNet.String() != ip.String()+"/32" {
		t.Errorf("eth0 addresses %v (%v), want exactly %s/32", addrs, err, ip)
	}
	routes, err := pod.RouteList(link, netlink.FAMILY_V4)
	if err != nil {
		t.Fatalf("pod routes: %v", err)
	}
	var haveDefault bool
	for _, r := range routes {
		if (r.Dst == nil || r.Dst.String() == "0.0.0.0/0") && r.Gw.String() == "169.254.1.1" && r.Flags&int(netlink.FLAG_ONLINK) != 0 {
			haveDefault = true
		}
	}
	if !haveDefault {
		t.Errorf("pod routes %v, want default via 169.254.1.1 onlink", routes)
	}
	neighs, err := pod.NeighList(link.Attrs().Index, netlink.FAMILY_V4)
	if err != nil || len(neighs) != 1 || neighs[0].IP.String() != "169.254.1.1" ||
		neighs[0].HardwareAddr.String() != "ee:ee:ee:ee:ee:ee" || neighs[0].State != netlink.NUD_PERMANENT {
		t.Errorf("pod neighbours %v (%v), want 169.254.1.1 -> ee:ee:ee:ee:ee:ee permanent", neighs, err)
	}
}

func assertHostSide(t *testing.T, env *wireEnv, ip netip.Addr) {
	t.Helper()
	host := cnitest.HandleIn(t, env.HostNS)
	link, err := host.LinkByName(env.HostVeth())
	if err != nil {
		t.Fatalf("host veth %s: %v", env.HostVeth(), err)
	}
	if link.Attrs().HardwareAddr.String() != "ee:ee:ee:ee:ee:ee" || link.Attrs().MTU != 1400 {
		t.Errorf("host veth mac %s mtu %d, want ee:ee:ee:ee:ee:ee and 1400", link.Attrs().HardwareAddr, link.Attrs().MTU)
	}
	routes, err := host.RouteList(link, netlink.FAMILY_V4)
	if err != nil || len(routes) != 1 || routes[0].Dst.String() != ip.String()+"/32" || routes[0].Scope != netlink.SCOPE_LINK {
		t.Errorf("host routes via %s: %v (%v), want exactly %s/32 scope link", env.HostVeth(), routes, err, ip)
	}
}

func TestDelTwiceSucceeds(t *testing.T) {
	env := newPodEnv(t)
	conf := cnitest.NetConf(env.IPAMD.Socket, "1.1.0", "")
	cnitest.MustSucceed(t, env.Call(t, "ADD", conf), "ADD")
	cnitest.MustSucceed(t, env.Call(t, "DEL", conf), "first DEL")
	cnitest.MustSucceed(t, env.Call(t, "DEL", conf), "second DEL")
	if _, ok := env.IPAMD.Store.Lookup(env.Key()); ok {
		t.Errorf("ipamd still holds an address after DEL")
	}
	if _, err := cnitest.HandleIn(t, env.HostNS).LinkByName(env.HostVeth()); err == nil {
		t.Errorf("host veth %s survived DEL", env.HostVeth())
	}
	if _, err := cnitest.HandleIn(t, env.PodNS).LinkByName("eth0"); err == nil {
		t.Errorf("eth0 survived DEL in the pod")
	}
}

func TestDelAfterNetnsDeletedSucceeds(t *testing.T) {
	env := newPodEnv(t)
	conf := cnitest.NetConf(env.IPAMD.Socket, "1.1.0", "")
	cnitest.MustSucceed(t, env.Call(t, "ADD", conf), "ADD")
	cnitest.DeleteNetns(env.PodNS)
	cnitest.MustSucceed(t, env.Call(t, "DEL", conf), "DEL after the netns is gone")
	noNetns := cnitest.Call{Command: "DEL", HostNetns: env.HostNS, SandboxID: env.SandboxID, IfName: "eth0",
		Args: cnitest.PodArgs(env.SandboxID), Config: conf}
	cnitest.MustSucceed(t, cnitest.Run(t, noNetns), "DEL with an empty CNI_NETNS")
	if code := cnitest.CheckViaWire(t, env.IPAMD.Socket, env.Key()); code != wire.CodeNotFound {
		t.Errorf("ipamd Check after DEL: code %d, want NotFound", code)
	}
}

func TestDelFailsWhenIPAMDUnreachable(t *testing.T) {
	env := newPodEnv(t)
	cnitest.MustFailWith(t, env.Call(t, "DEL", cnitest.NetConf("/nonexistent/ipamd.sock", "1.1.0", "")), types.ErrTryAgainLater, "DEL without ipamd")
}

func TestCheckPassesAfterAddAndFailsWhenAddressRemoved(t *testing.T) {
	env := newPodEnv(t)
	conf := cnitest.NetConf(env.IPAMD.Socket, "1.1.0", "")
	add := env.Call(t, "ADD", conf)
	cnitest.MustSucceed(t, add, "ADD")
	withPrev := withPrevResult(t, conf, add.Stdout)
	cnitest.MustSucceed(t, env.Call(t, "CHECK", withPrev), "CHECK after ADD")

	pod := cnitest.HandleIn(t, env.PodNS)
	link, err := pod.LinkByName("eth0")
	if err != nil {
		t.Fatalf("eth0: %v", err)
	}
	addr := &netlink.Addr{IPNet: &net.IPNet{IP: net.ParseIP("198.18.0.10"), Mask: net.CIDRMask(32, 32)}}
	if err := pod.AddrDel(link, addr); err != nil {
		t.Fatalf("remove the address by hand: %v", err)
	}
	cnitest.MustFailWith(t, env.Call(t, "CHECK", withPrev), cni.ErrCheckFailed, "CHECK after the address was removed")
}

func TestCheckFailsWhenIPAMDNoLongerHoldsAddress(t *testing.T) {
	env := newPodEnv(t)
	conf := cnitest.NetConf(env.IPAMD.Socket, "1.0.0", "")
	add := env.Call(t, "ADD", conf)
	cnitest.MustSucceed(t, add, "ADD")
	if _, _, err := env.IPAMD.Store.Release(t.Context(), env.Key()); err != nil {
		t.Fatalf("release in ipamd: %v", err)
	}
	cnitest.MustFailWith(t, env.Call(t, "CHECK", withPrevResult(t, conf, add.Stdout)), cni.ErrAddressNotHeld, "CHECK after ipamd released")
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

func TestFailedAddReleasesAddress(t *testing.T) {
	env := newPodEnv(t)
	pod := cnitest.HandleIn(t, env.PodNS)
	if err := pod.LinkAdd(&netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: "eth0", TxQLen: -1}, PeerName: "taken0", PeerTxQLen: -1}); err != nil {
		t.Fatalf("occupy eth0 in the pod: %v", err)
	}
	cnitest.MustFailWith(t, env.Call(t, "ADD", cnitest.NetConf(env.IPAMD.Socket, "1.1.0", "")), cni.ErrNetworkSetup, "ADD with eth0 taken")
	if code := cnitest.CheckViaWire(t, env.IPAMD.Socket, env.Key()); code != wire.CodeNotFound {
		t.Errorf("ipamd Check after the failed ADD: code %d, want NotFound (%d)", code, wire.CodeNotFound)
	}
	if _, err := cnitest.HandleIn(t, env.HostNS).LinkByName(env.HostVeth()); err == nil {
		t.Errorf("host veth %s left behind by the failed ADD", env.HostVeth())
	}
}

// TestEverySupportedVersion runs ADD, CHECK and DEL with each spec version
// the plugin claims, and checks the result is in the version asked for.
func TestEverySupportedVersion(t *testing.T) {
	env := newPodEnv(t)
	for _, v := range []string{"0.4.0", "1.0.0", "1.1.0"} {
		conf := cnitest.NetConf(env.IPAMD.Socket, v, "")
		add := env.Call(t, "ADD", conf)
		cnitest.MustSucceed(t, add, "ADD "+v)
		var res struct {
			CNIVersion string `json:"cniVersion"`
			IPs        []struct {
				Address string `json:"address"`
			} `json:"ips"`
		}
		if err := json.Unmarshal(add.Stdout, &res); err != nil || res.CNIVersion != v || len(res.IPs) != 1 {
			t.Errorf("ADD %s result %s (%v), want cniVersion %s with one address", v, add.Stdout, err, v)
		}
		cnitest.MustSucceed(t, env.Call(t, "CHECK", withPrevResult(t, conf, add.Stdout)), "CHECK "+v)
		cnitest.MustSucceed(t, env.Call(t, "DEL", conf), "DEL "+v)
	}
}
