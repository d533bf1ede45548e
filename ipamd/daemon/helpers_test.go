package daemon_test

import (
	"context"
	"errors"
	"net/netip"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/sandboxipam/sandboxipam/internal/testadapter"
	"github.com/sandboxipam/sandboxipam/internal/testsupport"
	ipamdv1 "github.com/sandboxipam/sandboxipam/ipamd/api/v1"
	"github.com/sandboxipam/sandboxipam/ipamd/api/wire"
	"github.com/sandboxipam/sandboxipam/ipamd/api/wire/wireproto"
	"github.com/sandboxipam/sandboxipam/ipamd/config"
	"github.com/sandboxipam/sandboxipam/runtime"
	"google.golang.org/protobuf/proto"
)

const testNetwork = "testnet"

// node is one test node: a config for ipamd, and the test adapter's
// state file, which plays the container runtime.
type node struct {
	t     testing.TB
	dir   string
	cfg   config.Config
	state string

	mu        sync.Mutex
	sandboxes map[string]runtime.Sandbox
	down      bool
	hang      bool
}

// newNode prepares a node whose ipamd serves cidr through the real test
// adapter plugin. The directory is short so the socket path fits.
func newNode(t testing.TB, cidr string) *node {
	t.Helper()
	dir := testsupport.ShortDir(t, "ipamd-d")
	n := &node{t: t, dir: dir, state: filepath.Join(dir, "runtime.json"), sandboxes: map[string]runtime.Sandbox{}}
	cfg := config.DefaultConfig()
	cfg.Socket = filepath.Join(dir, "run", "ipamd.sock")
	cfg.StateDir = filepath.Join(dir, "state")
	cfg.Network = testNetwork
	cfg.Cooldown = time.Millisecond
	cfg.Reconcile.Interval = time.Hour // tests run passes on demand
	cfg.Reconcile.Grace = time.Millisecond
	// Pods the test runtime lists have no pod link: on a node where the
	// plugin wires every pod, they hold nothing once this short wait after
	// start is over. Tests of the default (auto: nothing inferred from a
	// missing link) set PodWiring back.
	cfg.PodLinks.PodWiring = config.PodWiringPlugin
	cfg.Advanced.Reconcile.LinkGrace = time.Millisecond
	cfg.Runtime.Adapter = testadapter.Build(t)
	cfg.Runtime.Args = []string{"--state=" + n.state}
	cfg.Runtime.AutoMTLS = false
	cfg.Advanced.Adapter.MinBackoff = 20 * time.Millisecond
	cfg.Advanced.Adapter.MaxBackoff = 200 * time.Millisecond
	// A health check's ping may take as long as the interval: a short one
	// on a busy machine declares a healthy plugin dead and relaunches it.
	// A dead plugin is noticed by its exit, not by the interval.
	cfg.Advanced.Adapter.HealthInterval = 10 * time.Second
	// A cold start of the plugin on a busy machine takes seconds.
	cfg.Advanced.Adapter.StartTimeout = time.Minute
	cfg.IPSource.Type = config.SourceStatic
	cfg.IPSource.Static.CIDRs = []string{cidr}
	cfg.Introspection.Address = "127.0.0.1:0"
	cfg.Metrics.Address = ""
	cfg.Log.Level = "debug"
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	n.cfg = cfg
	n.writeState()
	return n
}

// addSandbox makes the "runtime" report a sandbox, as it does before the
// CNI ADD; removeSandbox forgets it, as after the pod is deleted.
func (n *node) addSandbox(id string) {
	n.mu.Lock()
	n.sandboxes[id] = runtime.Sandbox{ID: id, Name: "pod-" + id, Namespace: "default", UID: "uid-" + id,
		State: runtime.StateReady, CreatedAt: time.Unix(1_700_000_000, 0).UTC(), NetNS: "/var/run/netns/" + id}
	n.mu.Unlock()
	n.writeState()
}

func (n *node) removeSandbox(id string) {
	n.mu.Lock()
	delete(n.sandboxes, id)
	n.mu.Unlock()
	n.writeState()
}

func (n *node) setUnavailable(down bool) {
	n.mu.Lock()
	n.down = down
	n.mu.Unlock()
	n.writeState()
}

func (n *node) setHang(hang bool) {
	n.mu.Lock()
	n.hang = hang
	n.mu.Unlock()
	n.writeState()
}

func (n *node) writeState() {
	n.mu.Lock()
	defer n.mu.Unlock()
	st := testadapter.State{RuntimeName: "fake-runtime", RuntimeVersion: "1.0", Unavailable: n.down, Hang: n.hang, Sandboxes: []runtime.Sandbox{}}
	for _, s := range n.sandboxes {
		st.Sandboxes = append(st.Sandboxes, s)
	}
	if err := testadapter.WriteState(n.state, st); err != nil {
		n.t.Fatal(err)
	}
}

// cniClient calls ipamd over the wire framing, one connection per call,
// exactly as the CNI plugin does.
type cniClient struct{ socket string }

func attachment(id string) *ipamdv1.Attachment {
	return &ipamdv1.Attachment{Network: testNetwork, SandboxId: id, Ifname: "eth0"}
}

func (c cniClient) do(ctx context.Context, m wire.Method, req, resp proto.Message) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	wc, err := wire.Dial(ctx, c.socket)
	if err != nil {
		return err
	}
	defer wc.Close()
	return wireproto.Call(ctx, wc, m, req, resp)
}

// add returns the address in CIDR notation.
func (c cniClient) add(ctx context.Context, id string) (string, error) {
	var resp ipamdv1.AddResponse
	req := &ipamdv1.AddRequest{Attachment: attachment(id), Netns: "/var/run/netns/" + id,
		Pod: &ipamdv1.PodRef{Name: "pod-" + id, Namespace: "default", Uid: "uid-" + id}}
	if err := c.do(ctx, wire.MethodAdd, req, &resp); err != nil {
		return "", err
	}
	if len(resp.Ips) == 0 { // one per family: a dual-stack pool answers two, IPv4 first
		return "", errors.New("add answered no address")
	}
	return resp.Ips[0].Address, nil
}

func (c cniClient) del(ctx context.Context, id string) (bool, error) {
	var resp ipamdv1.DelResponse
	err := c.do(ctx, wire.MethodDel, &ipamdv1.DelRequest{Attachment: attachment(id)}, &resp)
	return resp.Released, err
}

func (c cniClient) status(ctx context.Context) (*ipamdv1.StatusResponse, error) {
	var resp ipamdv1.StatusResponse
	err := c.do(ctx, wire.MethodStatus, &ipamdv1.StatusRequest{}, &resp)
	return &resp, err
}

// setSandboxIP records the pod IP in the sandbox's status, as CRI does.
func (n *node) setSandboxIP(id, ip string) {
	n.mu.Lock()
	s := n.sandboxes[id]
	s.IPs = []netip.Addr{netip.MustParseAddr(ip)}
	n.sandboxes[id] = s
	n.mu.Unlock()
	n.writeState()
}

// waitReady waits until ipamd hands out addresses. A node that starts
// without a checkpoint serves ADDs only once a listing proved which
// addresses are free, and the adapter launches in the background, so a
// first ADD right after start may rightly be refused on a busy machine.
func waitReady(t testing.TB, cni cniClient) {
	t.Helper()
	testsupport.Wait(t, "ipamd to be ready for ADDs", func() (bool, string) {
		st, err := cni.status(t.Context())
		if err != nil {
			return false, err.Error()
		}
		return st.Ready, st.String()
	})
}

// addAll returns every address of an ADD (one per family) in CIDR
// notation.
func (c cniClient) addAll(ctx context.Context, id string) ([]string, error) {
	var resp ipamdv1.AddResponse
	req := &ipamdv1.AddRequest{Attachment: attachment(id), Netns: "/var/run/netns/" + id,
		Pod: &ipamdv1.PodRef{Name: "pod-" + id, Namespace: "default", Uid: "uid-" + id}}
	if err := c.do(ctx, wire.MethodAdd, req, &resp); err != nil {
		return nil, err
	}
	out := make([]string, len(resp.Ips))
	for i, ip := range resp.Ips {
		out[i] = ip.Address
	}
	return out, nil
}
