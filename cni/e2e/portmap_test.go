package e2e_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/containernetworking/cni/libcni"
	"github.com/containernetworking/plugins/pkg/ns"

	"github.com/sandboxipam/sandboxipam/cni"
	"github.com/sandboxipam/sandboxipam/cni/internal/cnitest"
	"github.com/sandboxipam/sandboxipam/internal/image"
	"github.com/sandboxipam/sandboxipam/internal/testsupport"
	"github.com/sandboxipam/sandboxipam/ipamd/datastore"
)

// The node's address on the link to the client namespace, which stands in
// for a machine outside the node.
const (
	nodeAddr   = "198.19.253.1"
	clientAddr = "198.19.253.2"
	hostPort   = 8080
)

// TestHostPortReachesThePodThroughPortMap runs the conflist ipamd writes,
// as a runtime runs it (libcni, the portMappings capability filled in
// from the pod's hostPorts), with the real plugin, the real ipamd and the
// portmap the image ships. A pod without hostPorts leaves no netfilter
// rule behind its ADD and DEL; a pod with one is reached on the node's
// address, from outside the node and from the node itself, at its
// container port; after its DEL the port is closed and the address free.
func TestHostPortReachesThePodThroughPortMap(t *testing.T) {
	testsupport.RequireRoot(t, "ip", "iptables-save")
	ipamd, list := startIPAMDWritingConfList(t)
	node := newPortMapNode(t, true)

	plain := node.pod(t, "plain", nil)
	plain.add(t, list)
	if rules := node.natRules(t); strings.Contains(rules, "CNI-") {
		t.Fatalf("a pod without hostPorts made netfilter rules:\n%s", rules)
	}
	plain.del(t, list)

	web := node.pod(t, "web", []map[string]any{{"hostPort": hostPort, "containerPort": 80, "protocol": "tcp"}})
	web.add(t, list)
	web.inNode(t, "CHECK", func(ctx context.Context) error { return node.cni.CheckNetworkList(ctx, list, web.rt) })
	podIP := ipamd.Daemon.Store().Lookup
	held, ok := podIP(web.key())
	if !ok {
		t.Fatalf("ipamd holds nothing for %v", web.key())
	}
	for _, from := range []struct{ netns, source string }{{node.client, clientAddr}, {node.host, ""}} {
		got := web.serveOnce(t, func() error { return dialIn(t, from.netns, net.JoinHostPort(nodeAddr, "8080")) })
		if from.source != "" && got != from.source {
			t.Errorf("the pod saw a connection from %s, want the client's %s unchanged", got, from.source)
		}
	}
	web.del(t, list)
	if _, ok := podIP(web.key()); ok {
		t.Errorf("ipamd still holds %v after DEL", held.IPs())
	}
	err := dialIn(t, node.client, net.JoinHostPort(nodeAddr, "8080"))
	if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("after DEL, the node's port %d: %v, want connection refused (no mapping left)", hostPort, err)
	}
	if rules := node.natRules(t); strings.Contains(rules, "8080") {
		t.Fatalf("portmap's rules outlived the DEL:\n%s", rules)
	}
}

// TestPortMapRunsOnlyForHostPorts runs the same conflist with no portmap
// in CNI_PATH, which the plugin must then never exec: a pod without
// hostPorts is added and deleted all the same. A pod with a hostPort is
// refused, naming portmap and CNI_PATH, and so is one whose hostPort
// portmap itself refuses (0) once it runs; either leaves nothing behind:
// no address held, no host veth, no netfilter rule.
func TestPortMapRunsOnlyForHostPorts(t *testing.T) {
	testsupport.RequireRoot(t, "ip", "iptables-save")
	ipamd, list := startIPAMDWritingConfList(t)
	held := ipamd.Daemon.Store().Lookup

	without := newPortMapNode(t, false)
	plain := without.pod(t, "plain", nil)
	plain.add(t, list)
	if _, ok := held(plain.key()); !ok {
		t.Fatalf("ipamd holds nothing for %v after its ADD", plain.key())
	}
	plain.del(t, list)
	if _, ok := held(plain.key()); ok {
		t.Fatalf("ipamd still holds %v after its DEL", plain.key())
	}

	web := without.pod(t, "web", []map[string]any{{"hostPort": hostPort, "containerPort": 80, "protocol": "tcp"}})
	err := web.tryAdd(t, list)
	if err == nil || !strings.Contains(err.Error(), "no executable portmap in CNI_PATH") {
		t.Fatalf("ADD of a pod with a hostPort and no portmap: %v, want the plugin to name the missing portmap", err)
	}
	without.expectNothingLeft(t, web, held)

	with := newPortMapNode(t, true)
	zero := with.pod(t, "zero", []map[string]any{{"hostPort": 0, "containerPort": 80, "protocol": "tcp"}})
	err = zero.tryAdd(t, list)
	if err == nil || !strings.Contains(err.Error(), "portmap ADD") || !strings.Contains(err.Error(), "Invalid host port number: 0") {
		t.Fatalf("ADD of a pod with hostPort 0: %v, want portmap's own refusal", err)
	}
	with.expectNothingLeft(t, zero, held)
}

// TestUpgradeFromChainedPortMapRemovesItsRules: a pod added under the
// conflist ipamd wrote before (portmap chained after sandboxipam) is
// deleted under today's, as a runtime does after an upgrade: the plugin
// runs portmap's DEL for its hostPort, so the rules portmap made under the
// same network name and container ID go, and the address is released.
func TestUpgradeFromChainedPortMapRemovesItsRules(t *testing.T) {
	testsupport.RequireRoot(t, "ip", "iptables-save")
	ipamd, list := startIPAMDWritingConfList(t)
	chained, err := libcni.ConfListFromBytes(fmt.Appendf(nil, `{"cniVersion":"1.0.0","name":%q,"plugins":[`+
		`{"type":"sandboxipam","ipamdSocket":%q},`+
		`{"type":"portmap","backend":"iptables","capabilities":{"portMappings":true}}]}`, list.Name, ipamd.Socket))
	if err != nil {
		t.Fatal(err)
	}
	node := newPortMapNode(t, true)
	web := node.pod(t, "web", []map[string]any{{"hostPort": hostPort, "containerPort": 80, "protocol": "tcp"}})
	web.add(t, chained)
	if rules := node.natRules(t); !strings.Contains(rules, "8080") {
		t.Fatalf("the chained portmap made no rule for hostPort %d:\n%s", hostPort, rules)
	}
	web.del(t, list)
	if rules := node.natRules(t); strings.Contains(rules, "8080") || strings.Contains(rules, "CNI-DN-") {
		t.Fatalf("the chained portmap's rules outlived the DEL under today's conflist:\n%s", rules)
	}
	if a, ok := ipamd.Daemon.Store().Lookup(web.key()); ok {
		t.Fatalf("ipamd still holds %v after DEL", a.IPs())
	}
}

// startIPAMDWritingConfList starts ipamd with the default cni.portMap and
// returns the conflist it writes once ready.
func startIPAMDWritingConfList(t *testing.T) (*realIPAMD, *libcni.NetworkConfigList) {
	t.Helper()
	cfg := ipamdConfig(t, os.TempDir(), 30*time.Second, "198.18.0.0/24")
	cfg.CNI.ConfListPath = filepath.Join(filepath.Dir(cfg.StateDir), "net.d", "10-podnet.conflist")
	ipamd := startIPAMDConfig(t, cfg)
	var confBytes []byte
	testsupport.Wait(t, "ipamd to write its conflist", func() (bool, string) {
		var err error
		confBytes, err = os.ReadFile(cfg.CNI.ConfListPath)
		return err == nil, "not yet"
	})
	list, err := libcni.ConfListFromBytes(confBytes)
	if err != nil || len(list.Plugins) != 1 || list.Plugins[0].Network.Type != "sandboxipam" ||
		!list.Plugins[0].Network.Capabilities["portMappings"] {
		t.Fatalf("conflist %s (%v): want sandboxipam alone, with the portMappings capability", confBytes, err)
	}
	return ipamd, list
}

// portMapNode is a node namespace with the CNI bin directories of the
// chain, and a client namespace linked to it.
type portMapNode struct {
	host, client string
	cni          *libcni.CNIConfig
}

// newPortMapNode makes the node; withPortMap puts the portmap the image
// ships in its CNI_PATH, beside the plugin.
func newPortMapNode(t *testing.T, withPortMap bool) *portMapNode {
	t.Helper()
	n := &portMapNode{host: cnitest.NewNetns(t, "node"), client: cnitest.NewNetns(t, "client")}
	paths := []string{filepath.Dir(cnitest.PluginBinary(t))}
	if withPortMap {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		portmap, err := image.BuildPortMap(ctx, testsupport.Root(t), t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		paths = append(paths, filepath.Dir(portmap))
	}
	n.cni = libcni.NewCNIConfigWithCacheDir(paths, t.TempDir(), nil)
	ipIn(t, n.host, "link", "set", "lo", "up")
	ipIn(t, n.client, "link", "set", "lo", "up")
	ipIn(t, n.host, "link", "add", "uplink", "type", "veth", "peer", "name", "uplink", "netns", n.client)
	ipIn(t, n.host, "addr", "add", nodeAddr+"/24", "dev", "uplink")
	ipIn(t, n.client, "addr", "add", clientAddr+"/24", "dev", "uplink")
	ipIn(t, n.host, "link", "set", "uplink", "up")
	ipIn(t, n.client, "link", "set", "uplink", "up")
	run(t, "ip", "netns", "exec", n.host, "sysctl", "-qw", "net.ipv4.ip_forward=1")
	return n
}

// expectNothingLeft requires that a refused ADD left nothing: no address
// held for the pod, no host veth in the node, no portmap rule.
func (n *portMapNode) expectNothingLeft(t *testing.T, p *portMapPod, held func(datastore.Key) (datastore.Assignment, bool)) {
	t.Helper()
	if a, ok := held(p.key()); ok {
		t.Errorf("ipamd holds %v for %v after its refused ADD", a.IPs(), p.key())
	}
	for _, link := range strings.Split(run(t, "ip", "-n", n.host, "-o", "link", "show", "type", "veth"), "\n") {
		if _, name, _ := strings.Cut(link, ": "); strings.HasPrefix(name, cni.DefaultHostVethPrefix) {
			t.Errorf("a host veth outlived the refused ADD: %s", link)
		}
	}
	if rules := n.natRules(t); strings.Contains(rules, "CNI-") {
		t.Errorf("portmap's rules outlived the refused ADD:\n%s", rules)
	}
}

// natRules is the node namespace's nat table.
func (n *portMapNode) natRules(t *testing.T) string {
	t.Helper()
	return run(t, "ip", "netns", "exec", n.host, "iptables-save", "-t", "nat")
}

func ipIn(t *testing.T, netns string, args ...string) {
	t.Helper()
	run(t, "ip", append([]string{"-n", netns}, args...)...)
}

func run(t *testing.T, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v: %s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// dialIn opens and closes a TCP connection to addr from the namespace.
func dialIn(t *testing.T, netns, addr string) error {
	t.Helper()
	target, err := ns.GetNS(cnitest.NetnsPath(netns))
	if err != nil {
		t.Fatal(err)
	}
	defer target.Close()
	return target.Do(func(ns.NetNS) error {
		conn, err := net.DialTimeout("tcp4", addr, 10*time.Second)
		if err != nil {
			return err
		}
		return conn.Close()
	})
}

// portMapPod is one pod sandbox on the node, attached through libcni.
type portMapPod struct {
	node  *portMapNode
	netns string
	rt    *libcni.RuntimeConf
}

// pod makes a pod namespace whose runtime config carries hostPorts as a
// runtime fills the portMappings capability (none: nil).
func (n *portMapNode) pod(t *testing.T, name string, ports []map[string]any) *portMapPod {
	t.Helper()
	p := &portMapPod{node: n, netns: cnitest.NewNetns(t, name)}
	id := cnitest.SandboxID(t.Name() + "/" + name)
	p.rt = &libcni.RuntimeConf{ContainerID: id, NetNS: cnitest.NetnsPath(p.netns), IfName: "eth0", Args: podRuntimeArgs(id)}
	if ports != nil {
		p.rt.CapabilityArgs = map[string]any{"portMappings": ports}
	}
	return p
}

func (p *portMapPod) key() datastore.Key {
	return datastore.Key{Network: "podnet", SandboxID: p.rt.ContainerID, IfName: "eth0"}
}

// add and del run the whole chain inside the node namespace, as the
// runtime on a node does.
func (p *portMapPod) add(t *testing.T, list *libcni.NetworkConfigList) {
	t.Helper()
	if err := p.tryAdd(t, list); err != nil {
		t.Fatal(err)
	}
}

// tryAdd runs ADD and returns its error.
func (p *portMapPod) tryAdd(t *testing.T, list *libcni.NetworkConfigList) error {
	t.Helper()
	return p.inNodeErr(t, "ADD", func(ctx context.Context) error {
		_, err := p.node.cni.AddNetworkList(ctx, list, p.rt)
		return err
	})
}

func (p *portMapPod) del(t *testing.T, list *libcni.NetworkConfigList) {
	t.Helper()
	p.inNode(t, "DEL", func(ctx context.Context) error { return p.node.cni.DelNetworkList(ctx, list, p.rt) })
}

func (p *portMapPod) inNode(t *testing.T, what string, f func(context.Context) error) {
	t.Helper()
	if err := p.inNodeErr(t, what, f); err != nil {
		t.Fatal(err)
	}
}

// inNodeErr runs f in the node namespace and returns its error.
func (p *portMapPod) inNodeErr(t *testing.T, what string, f func(context.Context) error) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	host, err := ns.GetNS(cnitest.NetnsPath(p.node.host))
	if err != nil {
		t.Fatal(err)
	}
	defer host.Close()
	if err := host.Do(func(ns.NetNS) error { return f(ctx) }); err != nil {
		return fmt.Errorf("%s of %s through the conflist: %w", what, p.rt.ContainerID, err)
	}
	return nil
}

// serveOnce listens on the pod's container port 80, runs dial, and
// returns the address the pod saw the connection come from.
func (p *portMapPod) serveOnce(t *testing.T, dial func() error) string {
	t.Helper()
	var l net.Listener
	inNetns(t, p.netns, func() (err error) {
		l, err = net.Listen("tcp4", "0.0.0.0:80")
		return err
	})
	defer l.Close()
	from := make(chan string, 1)
	go func() {
		conn, err := l.Accept()
		if err != nil {
			from <- "accept: " + err.Error()
			return
		}
		from <- conn.RemoteAddr().(*net.TCPAddr).IP.String()
		conn.Close()
	}()
	if err := dial(); err != nil {
		t.Fatalf("the node's port %d does not reach the pod: %v", hostPort, err)
	}
	return <-from
}

// podRuntimeArgs are cnitest.PodArgs as libcni takes them.
func podRuntimeArgs(id string) [][2]string {
	var args [][2]string
	for _, kv := range strings.Split(cnitest.PodArgs(id), ";") {
		k, v, _ := strings.Cut(kv, "=")
		args = append(args, [2]string{k, v})
	}
	return args
}
