package cni_test

import (
	"encoding/json"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"testing"

	"github.com/containernetworking/cni/pkg/types"
	current "github.com/containernetworking/cni/pkg/types/100"

	"github.com/sandboxipam/sandboxipam/cni"
	"github.com/sandboxipam/sandboxipam/cni/internal/cnitest"
	"github.com/sandboxipam/sandboxipam/internal/testsupport"
	"github.com/sandboxipam/sandboxipam/ipamd/datastore"
)

func TestIPAMModeReturnsIPAMDAddressAndLeavesNetnsAlone(t *testing.T) {
	env := newPodEnv(t)
	o := env.Call(t, "ADD", cnitest.IPAMConf(env.IPAMD.Socket))
	cnitest.MustSucceed(t, o, "IPAM ADD")
	var res current.Result
	if err := json.Unmarshal(o.Stdout, &res); err != nil {
		t.Fatalf("decode result %s: %v", o.Stdout, err)
	}
	if len(res.Interfaces) != 0 || len(res.IPs) != 1 || res.IPs[0].Address.String() != "198.18.0.10/16" ||
		res.IPs[0].Gateway.String() != "198.18.0.1" || res.IPs[0].Interface != nil {
		t.Errorf("IPAM result %s, want only ips [198.18.0.10/16 gateway 198.18.0.1] without interface", o.Stdout)
	}
	if len(res.Routes) != 1 || res.Routes[0].Dst.String() != "0.0.0.0/0" {
		t.Errorf("IPAM result routes %v, want the configured 0.0.0.0/0", res.Routes)
	}
	links, err := cnitest.HandleIn(t, env.PodNS).LinkList()
	if err != nil || len(links) != 1 || links[0].Attrs().Name != "lo" {
		t.Errorf("pod netns links after IPAM ADD: %v (%v), want only lo", links, err)
	}
	if a, ok := env.IPAMD.Store.Lookup(env.Key()); !ok || a.Wiring != datastore.WiringIPAMOnly {
		t.Errorf("ipamd recorded wiring %q (held %v) for the IPAM ADD, want %q: the plugin must say it runs as IPAM only", a.Wiring, ok, datastore.WiringIPAMOnly)
	}
	cnitest.MustSucceed(t, env.Call(t, "CHECK", withPrevResult(t, cnitest.IPAMConf(env.IPAMD.Socket), o.Stdout)), "IPAM CHECK")
	cnitest.MustSucceed(t, env.Call(t, "DEL", cnitest.IPAMConf(env.IPAMD.Socket)), "IPAM DEL")
	if _, ok := env.IPAMD.Store.Lookup(env.Key()); ok {
		t.Errorf("ipamd still holds an address after IPAM DEL")
	}
}

func TestGCReleasesAttachmentsNotListed(t *testing.T) {
	env := newPodEnv(t)
	ids := []string{cnitest.SandboxID("gc-keep"), cnitest.SandboxID("gc-drop-1"), cnitest.SandboxID("gc-drop-2")}
	for _, id := range ids {
		o := cnitest.Run(t, cnitest.Call{Command: "ADD", HostNetns: env.HostNS, SandboxID: id, IfName: "eth0",
			Netns: cnitest.NetnsPath(env.PodNS), Args: cnitest.PodArgs(id), Config: cnitest.IPAMConf(env.IPAMD.Socket)})
		cnitest.MustSucceed(t, o, "ADD "+id)
	}
	gcConf := fmt.Appendf(nil, `{"cniVersion":"1.1.0","name":"podnet","type":"sandboxipam","ipamdSocket":%q,`+
		`"cni.dev/valid-attachments":[{"containerID":%q,"ifname":"eth0"}]}`, env.IPAMD.Socket, ids[0])
	cnitest.MustSucceed(t, cnitest.Run(t, cnitest.Call{Command: "GC", HostNetns: env.HostNS, Config: gcConf}), "GC")

	left := env.IPAMD.Store.Assignments()
	if len(left) != 1 || left[0].Key != (datastore.Key{Network: "podnet", SandboxID: ids[0], IfName: "eth0"}) {
		t.Errorf("assignments after GC: %v, want only %s/eth0", left, ids[0])
	}
}

func TestStatus(t *testing.T) {
	env := newPodEnv(t)
	statusOf := func(socket string) cnitest.Outcome {
		conf := fmt.Appendf(nil, `{"cniVersion":"1.1.0","name":"podnet","type":"sandboxipam","ipamdSocket":%q}`, socket)
		return cnitest.Run(t, cnitest.Call{Command: "STATUS", HostNetns: env.HostNS, Config: conf})
	}
	cnitest.MustSucceed(t, statusOf(env.IPAMD.Socket), "STATUS with ipamd up")
	cnitest.MustFailWith(t, statusOf("/nonexistent/ipamd.sock"), types.ErrPluginNotAvailable, "STATUS with ipamd down")

	full := cnitest.StartWireIPAMD(t, 1)
	id := cnitest.SandboxID("only")
	o := cnitest.Run(t, cnitest.Call{Command: "ADD", HostNetns: env.HostNS, SandboxID: id, IfName: "eth0",
		Netns: cnitest.NetnsPath(env.PodNS), Args: cnitest.PodArgs(id), Config: cnitest.IPAMConf(full.Socket)})
	cnitest.MustSucceed(t, o, "ADD taking the last address")
	cnitest.MustFailWith(t, statusOf(full.Socket), types.ErrPluginNotAvailable, "STATUS with an empty pool")
	next := cnitest.SandboxID("one-too-many")
	o = cnitest.Run(t, cnitest.Call{Command: "ADD", HostNetns: env.HostNS, SandboxID: next, IfName: "eth0",
		Netns: cnitest.NetnsPath(env.PodNS), Args: cnitest.PodArgs(next), Config: cnitest.IPAMConf(full.Socket)})
	cnitest.MustFailWith(t, o, cni.ErrPoolExhausted, "ADD with an empty pool")
}

func TestBadInputsFailBeforeAnythingIsAssigned(t *testing.T) {
	env := newPodEnv(t)
	good := cnitest.NetConf(env.IPAMD.Socket, "1.1.0", "")
	cases := []struct {
		name   string
		ifName string
		args   string
		config []byte
		code   uint
	}{
		{"malformed JSON", "eth0", cnitest.PodArgs(env.SandboxID), []byte(`{"cniVersion":"1.1.0","name":`), types.ErrDecodingFailure},
		{"unknown cniVersion", "eth0", cnitest.PodArgs(env.SandboxID), cnitest.NetConf(env.IPAMD.Socket, "9.9.9", ""), types.ErrIncompatibleCNIVersion},
		{"interface name over 15 characters", "eth0-much-too-long", cnitest.PodArgs(env.SandboxID), good, types.ErrInvalidEnvironmentVariables},
		{"missing K8S_POD_NAME", "eth0", "K8S_POD_NAMESPACE=default", good, types.ErrInvalidEnvironmentVariables},
		{"missing K8S_POD_NAMESPACE", "eth0", "K8S_POD_NAME=web-0", good, types.ErrInvalidEnvironmentVariables},
		{"infra container ID differs", "eth0", "K8S_POD_NAME=web-0;K8S_POD_NAMESPACE=default;K8S_POD_INFRA_CONTAINER_ID=" + cnitest.SandboxID("other"), good, types.ErrInvalidEnvironmentVariables},
		{"malformed CNI_ARGS", "eth0", "K8S_POD_NAME", good, types.ErrInvalidEnvironmentVariables},
		{"mtu too large", "eth0", cnitest.PodArgs(env.SandboxID), cnitest.NetConf(env.IPAMD.Socket, "1.1.0", `,"mtu":70000`), types.ErrInvalidNetworkConfig},
		{"hostVethPrefix too long", "eth0", cnitest.PodArgs(env.SandboxID), cnitest.NetConf(env.IPAMD.Socket, "1.1.0", `,"hostVethPrefix":"toolongprefix"`), types.ErrInvalidNetworkConfig},
		{"relative ipamdSocket", "eth0", cnitest.PodArgs(env.SandboxID), cnitest.NetConf("ipamd.sock", "1.1.0", ""), types.ErrInvalidNetworkConfig},
		{"timeout not a duration", "eth0", cnitest.PodArgs(env.SandboxID), cnitest.NetConf(env.IPAMD.Socket, "1.1.0", `,"timeout":5`), types.ErrDecodingFailure},
		{"netns is the plugin's own", "eth0", cnitest.PodArgs(env.SandboxID), good, types.ErrInvalidNetNS},
		{"netns does not exist", "eth0", cnitest.PodArgs(env.SandboxID), good, types.ErrInvalidNetNS},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			netns := cnitest.NetnsPath(env.PodNS)
			switch tc.name {
			case "netns is the plugin's own":
				netns = cnitest.NetnsPath(env.HostNS)
			case "netns does not exist":
				netns = cnitest.NetnsPath(env.PodNS + "-gone")
			}
			o := cnitest.Run(t, cnitest.Call{Command: "ADD", HostNetns: env.HostNS, SandboxID: env.SandboxID, IfName: tc.ifName,
				Netns: netns, Args: tc.args, Config: tc.config})
			cnitest.MustFailWith(t, o, tc.code, tc.name)
			if o.Err.Msg == "" {
				t.Errorf("error object has no msg")
			}
			if left := env.IPAMD.Store.Assignments(); len(left) != 0 {
				t.Errorf("ipamd holds %v after a rejected ADD", left)
			}
			if links, err := cnitest.HandleIn(t, env.HostNS).LinkList(); err != nil || len(links) != 1 {
				t.Errorf("host netns links after a rejected ADD: %v (%v), want only lo", links, err)
			}
		})
	}
}

// TestAddFailsWhenIPAMDHangs: an ipamd that accepts but never answers
// costs the runtime the configured timeout, then a retryable error.
func TestAddFailsWhenIPAMDHangs(t *testing.T) {
	env := newPodEnv(t)
	socket := filepath.Join(t.TempDir(), "hung.sock")
	listener, err := net.Listen("unix", socket)
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	defer listener.Close()
	go func() {
		var held []net.Conn // open, never answered
		defer func() {
			for _, c := range held {
				c.Close()
			}
		}()
		for {
			conn, err := listener.Accept()
			if err != nil {
				return
			}
			held = append(held, conn)
		}
	}()
	conf := fmt.Appendf(nil, `{"cniVersion":"1.1.0","name":"podnet","type":"bridge",`+
		`"ipam":{"type":"sandboxipam","ipamdSocket":%q,"timeout":"300ms"}}`, socket)
	o := env.Call(t, "ADD", conf)
	cnitest.MustFailWith(t, o, types.ErrTryAgainLater, "ADD with a hung ipamd")
	if !strings.Contains(o.Err.Details, "deadline") || !strings.Contains(o.Err.Details, "releasing the address failed too") {
		t.Errorf("error details %q do not name the deadline", o.Err.Details)
	}
}

// TestAddReleasesWhenAnswerIsLost: ipamd assigned, but its answer never
// arrived; the failed ADD must not leave that address behind.
func TestAddReleasesWhenAnswerIsLost(t *testing.T) {
	testsupport.RequireRoot(t, "ip")
	ipamd := cnitest.StartAnswerLosingIPAMD(t, 4)
	env := cnitest.NewPodEnv(t, ipamd.Socket)
	conf := cnitest.NetConf(ipamd.Socket, "1.1.0", `,"timeout":"500ms"`)
	cnitest.MustFailWith(t, env.Call(t, "ADD", conf), types.ErrTryAgainLater, "ADD whose answer is lost")
	if left := ipamd.Store.Assignments(); len(left) != 0 {
		t.Errorf("ipamd holds %v after the failed ADD, want nothing", left)
	}
	if links, err := cnitest.HandleIn(t, env.PodNS).LinkList(); err != nil || len(links) != 1 {
		t.Errorf("pod links after the failed ADD: %v (%v), want only lo", links, err)
	}
}
