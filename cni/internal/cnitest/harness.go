// Package cnitest runs the sandboxipam CNI plugin the way a container
// runtime does (exec, env, stdin) inside network namespaces a test creates,
// against a test ipamd that speaks the real wire protocol on the real
// datastore. It is test support: nothing outside tests imports it.
package cnitest

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/containernetworking/cni/pkg/types"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"github.com/sandboxipam/sandboxipam/internal/testsupport"
)

// RunTests runs a package's tests; call it from TestMain:
// os.Exit(cnitest.RunTests(m)). The plugin build is shared between test
// processes (testsupport.StaticBinary), so nothing is left to remove.
func RunTests(m *testing.M) int { return m.Run() }

// PluginBinary builds cmd/sandboxipam once per test process as make build
// ships it (static, the Makefile's flags), so tests exec the plugin as a
// runtime would.
func PluginBinary(tb testing.TB) string {
	tb.Helper()
	return testsupport.StaticBinary(tb, "./cmd/sandboxipam")
}

// NewNetns creates a named network namespace that is removed when the
// test ends, and returns its name.
func NewNetns(tb testing.TB, role string) string {
	tb.Helper()
	name := fmt.Sprintf("sbxt-%s-%s", role, rand.Text()[:10])
	if out, err := exec.Command("ip", "netns", "add", name).CombinedOutput(); err != nil {
		tb.Fatalf("ip netns add %s: %v: %s", name, err, out)
	}
	tb.Cleanup(func() { DeleteNetns(name) })
	return name
}

// DeleteNetns removes a namespace; one already gone is fine.
func DeleteNetns(name string) {
	_ = exec.Command("ip", "netns", "del", name).Run()
}

// NetnsPath is where ip netns mounts a named namespace.
func NetnsPath(name string) string { return "/run/netns/" + name }

// HandleIn opens a netlink handle inside the named namespace.
func HandleIn(tb testing.TB, name string) *netlink.Handle {
	tb.Helper()
	ns, err := netns.GetFromName(name)
	if err != nil {
		tb.Fatalf("open netns %s: %v", name, err)
	}
	defer ns.Close()
	h, err := netlink.NewHandleAt(ns, unix.NETLINK_ROUTE)
	if err != nil {
		tb.Fatalf("netlink in %s: %v", name, err)
	}
	tb.Cleanup(h.Close)
	return h
}

// Call is one plugin invocation.
type Call struct {
	Command   string // ADD, DEL, CHECK, GC, STATUS, VERSION
	HostNetns string // the plugin runs inside it; "" runs it where the test runs
	SandboxID string
	IfName    string
	Netns     string // CNI_NETNS
	Args      string // CNI_ARGS
	Config    []byte
}

// Outcome is what the plugin printed.
type Outcome struct {
	Stdout []byte
	Err    *types.Error // nil when the plugin exited 0
}

// Run execs the plugin, inside c.HostNetns when set, and decodes a CNI
// error object when it exits non-zero.
func Run(tb testing.TB, c Call) Outcome {
	tb.Helper()
	argv := []string{PluginBinary(tb)}
	if c.HostNetns != "" {
		argv = append([]string{"ip", "netns", "exec", c.HostNetns}, argv...)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = []string{
		"CNI_COMMAND=" + c.Command, "CNI_CONTAINERID=" + c.SandboxID, "CNI_IFNAME=" + c.IfName,
		"CNI_NETNS=" + c.Netns, "CNI_ARGS=" + c.Args, "CNI_PATH=/usr/lib/cni", "PATH=" + os.Getenv("PATH"),
	}
	cmd.Stdin = bytes.NewReader(c.Config)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	o := Outcome{Stdout: stdout.Bytes()}
	if err == nil {
		return o
	}
	o.Err = &types.Error{}
	if jerr := json.Unmarshal(stdout.Bytes(), o.Err); jerr != nil {
		tb.Fatalf("%s failed without a CNI error object: %v\nstdout: %s\nstderr: %s", c.Command, err, stdout.String(), stderr.String())
	}
	return o
}

// SandboxID derives a 64-hex-digit ID, the shape every runtime uses.
func SandboxID(seed string) string {
	sum := sha256.Sum256([]byte(seed))
	return hex.EncodeToString(sum[:])
}

// PodArgs are CNI_ARGS as containerd passes them for a pod.
func PodArgs(id string) string {
	return strings.Join([]string{
		"IgnoreUnknown=1", "K8S_POD_NAMESPACE=default", "K8S_POD_NAME=web-0",
		"K8S_POD_UID=0f8e5c3a-1111-4c2b-9a53-3f1c8a7d2e10", "K8S_POD_INFRA_CONTAINER_ID=" + id,
	}, ";")
}

// NetConf is a network config for the plugin as a main plugin.
func NetConf(socket, cniVersion string, extra string) []byte {
	return fmt.Appendf(nil, `{"cniVersion":%q,"name":"podnet","type":"sandboxipam","ipamdSocket":%q,"mtu":1400%s}`,
		cniVersion, socket, extra)
}

// IPAMConf is a bridge config that delegates IPAM to sandboxipam.
func IPAMConf(socket string) []byte {
	return fmt.Appendf(nil, `{"cniVersion":"1.1.0","name":"podnet","type":"bridge","bridge":"cni0",`+
		`"ipam":{"type":"sandboxipam","ipamdSocket":%q,"routes":[{"dst":"0.0.0.0/0"}]}}`, socket)
}

// MustSucceed fails the test when the plugin returned an error.
func MustSucceed(tb testing.TB, o Outcome, what string) {
	tb.Helper()
	if o.Err != nil {
		tb.Fatalf("%s failed: code %d: %s (%s)", what, o.Err.Code, o.Err.Msg, o.Err.Details)
	}
}

// MustFailWith fails the test unless the plugin returned CNI error code.
func MustFailWith(tb testing.TB, o Outcome, code uint, what string) {
	tb.Helper()
	if o.Err == nil {
		tb.Fatalf("%s succeeded, want CNI error code %d; stdout: %s", what, code, o.Stdout)
	}
	if o.Err.Code != code {
		tb.Fatalf("%s: CNI error code %d (%s: %s), want %d", what, o.Err.Code, o.Err.Msg, o.Err.Details, code)
	}
}
