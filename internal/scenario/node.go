package scenario

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	criapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/sandboxipam/sandboxipam/conformance/fixture"
	"github.com/sandboxipam/sandboxipam/internal/testenv"
	"github.com/sandboxipam/sandboxipam/internal/testsupport"
)

// NetworkName is the CNI network the scenario's pods attach to; ipamd's
// config names the same network.
const NetworkName = "sandboxipam"

// Options configures a Node.
type Options struct {
	// Dir is the node's work directory: absolute and short (containerd's
	// sockets live under it). It must not exist yet or be empty.
	Dir string
	// BinDir holds ipamd, ipamctl, sandboxipam (the CNI plugin) and
	// adapters/containerd, as `make build` lays them out in bin/.
	BinDir string
	// CIDR is ipamd's static pool. Default "198.18.0.0/28".
	CIDR string
	// Grace is the reconciler's grace period. Default 3s.
	Grace time.Duration
	// Runtime is the CRI runtime that calls the CNI plugin: RuntimeContainerd
	// (the default), RuntimeCRIO or RuntimeCRIDockerd; ipamd reads it
	// through the matching adapter (containerd, crio, dockershim).
	Runtime string
	// Logger receives the harness's progress; nil discards it.
	Logger *slog.Logger
}

// The runtimes a Node can run.
const (
	RuntimeContainerd = "containerd"
	RuntimeCRIO       = "crio"
	RuntimeCRIDockerd = "cri-dockerd"
)

// Node is one Kubernetes node's worth of real parts: a private CRI runtime
// (containerd, CRI-O, or cri-dockerd on a dockerd) that calls the
// sandboxipam CNI plugin, and ipamd with the matching adapter.
type Node struct {
	Containerd *testenv.Containerd // set when Options.Runtime is containerd
	CRIO       *testenv.CRIO       // set when it is crio
	Docker     *testenv.Docker     // set when it is cri-dockerd
	CRIDockerd *testenv.CRIDockerd // set when it is cri-dockerd
	Pods       *fixture.CRI
	IPAMD      *IPAMD

	opts       Options
	endpoint   string // the runtime's CRI endpoint
	cniConfDir string
	runtime    criapi.RuntimeServiceClient
	conn       *grpc.ClientConn
}

// adapters name ipamd's adapter for each runtime.
var adapters = map[string]string{RuntimeContainerd: "containerd", RuntimeCRIO: "crio", RuntimeCRIDockerd: "dockershim"}

// StartNode starts containerd with the sandboxipam CNI config, then ipamd.
func StartNode(ctx context.Context, opts Options) (*Node, error) {
	if opts.CIDR == "" {
		opts.CIDR = "198.18.0.0/28"
	}
	if opts.Grace == 0 {
		opts.Grace = 3 * time.Second
	}
	if opts.Runtime == "" {
		opts.Runtime = RuntimeContainerd
	}
	adapter, ok := adapters[opts.Runtime]
	if !ok {
		return nil, fmt.Errorf("scenario: Options.Runtime must be containerd, crio or cri-dockerd, got %q", opts.Runtime)
	}
	n := &Node{opts: opts}
	ipamdDir := filepath.Join(opts.Dir, "ipamd")
	// containerd's CNI config names ipamd's socket, and ipamd's config
	// names containerd's: containerd starts first, with the socket path
	// ipamd will serve.
	if err := n.startRuntime(ctx, IPAMDSocket(ipamdDir)); err != nil {
		return nil, err
	}
	var err error
	n.IPAMD, err = NewIPAMD(IPAMDConfig{
		Dir: ipamdDir, BinDir: opts.BinDir, Adapter: adapter, Endpoint: n.endpoint,
		CIDR: opts.CIDR, Grace: opts.Grace, Cooldown: time.Second,
	})
	if err != nil {
		n.Stop(ctx)
		return nil, err
	}
	if err := n.IPAMD.Start(ctx); err != nil {
		n.Stop(ctx)
		return nil, err
	}
	return n, nil
}

// startRuntime starts the runtime with the sandboxipam CNI config and
// connects the pod fixture to it.
func (n *Node) startRuntime(ctx context.Context, ipamdSocket string) error {
	var pauseImage, cgroupParent string
	switch n.opts.Runtime {
	case RuntimeContainerd:
		c, err := testenv.StartContainerd(ctx, testenv.ContainerdOptions{
			Dir: filepath.Join(n.opts.Dir, "ctd"), CNIConfList: conflist(ipamdSocket), CNIBinDirs: []string{n.opts.BinDir}, Logger: n.opts.Logger,
		})
		if err != nil {
			return err
		}
		n.Containerd, n.endpoint, n.cniConfDir, pauseImage, cgroupParent = c, c.Endpoint, c.CNIConfDir, c.PauseImage, c.CgroupParent
	case RuntimeCRIO:
		c, err := testenv.StartCRIO(ctx, testenv.CRIOOptions{
			Dir: filepath.Join(n.opts.Dir, "crio"), CNIConfList: conflist(ipamdSocket), CNIBinDirs: []string{n.opts.BinDir}, Logger: n.opts.Logger,
		})
		if err != nil {
			return err
		}
		n.CRIO, n.endpoint, n.cniConfDir, pauseImage, cgroupParent = c, c.Endpoint, c.CNIConfDir, c.PauseImage, c.CgroupParent
	case RuntimeCRIDockerd:
		if err := n.startCRIDockerd(ctx, ipamdSocket); err != nil {
			return err
		}
		c := n.CRIDockerd
		n.endpoint, n.cniConfDir, pauseImage, cgroupParent = c.Endpoint, c.CNIConfDir, c.PauseImage, c.CgroupParent
	}
	var err error
	n.Pods, err = fixture.NewCRI(ctx, fixture.CRIConfig{Endpoint: n.endpoint, PauseImage: pauseImage, CgroupParent: cgroupParent})
	if err != nil {
		n.Stop(ctx)
		return err
	}
	n.conn, err = grpc.NewClient(n.endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		n.Stop(ctx)
		return err
	}
	n.runtime = criapi.NewRuntimeServiceClient(n.conn)
	return nil
}

// startCRIDockerd starts a dockerd, then cri-dockerd in front of it.
func (n *Node) startCRIDockerd(ctx context.Context, ipamdSocket string) error {
	d, err := testenv.StartDocker(ctx, testenv.DockerOptions{Dir: filepath.Join(n.opts.Dir, "dkr"), Logger: n.opts.Logger})
	if err != nil {
		return err
	}
	n.Docker = d
	c, err := testenv.StartCRIDockerd(ctx, testenv.CRIDockerdOptions{
		Dir: filepath.Join(n.opts.Dir, "crid"), Docker: d, CNIConfList: conflist(ipamdSocket), CNIBinDirs: []string{n.opts.BinDir}, Logger: n.opts.Logger,
	})
	if err != nil {
		_ = d.Stop(ctx)
		return err
	}
	n.CRIDockerd = c
	return nil
}

// conflist is the CNI config containerd runs pods with: the sandboxipam
// plugin, talking to this node's ipamd.
func conflist(ipamdSocket string) []byte {
	return fmt.Appendf(nil, `{
  "cniVersion": "1.0.0",
  "name": %q,
  "plugins": [{"type": "sandboxipam", "ipamdSocket": %q}]
}`, NetworkName, ipamdSocket)
}

// Stop removes every pod, stops ipamd and containerd, and leaves nothing.
func (n *Node) Stop(ctx context.Context) {
	if n.Pods != nil {
		_ = n.Pods.Cleanup(ctx)
		_ = n.Pods.Close()
	}
	if n.conn != nil {
		_ = n.conn.Close()
	}
	if n.Containerd != nil {
		_ = n.Containerd.Stop(ctx)
	}
	if n.CRIO != nil {
		_ = n.CRIO.Stop(ctx)
	}
	if n.CRIDockerd != nil {
		_ = n.CRIDockerd.Stop(ctx)
	}
	if n.Docker != nil {
		_ = n.Docker.Stop(ctx)
	}
	if n.IPAMD != nil {
		_ = n.IPAMD.Close()
	}
}

// RuntimeView is what the runtime itself says: sandbox ID -> pod IP, for
// the sandboxes that still exist.
type RuntimeView map[string]string

// SandboxIPs lists every sandbox through CRI with the IP its status
// records (the address the CNI plugin returned on ADD).
func (n *Node) SandboxIPs(ctx context.Context) (RuntimeView, error) {
	list, err := n.runtime.ListPodSandbox(ctx, &criapi.ListPodSandboxRequest{})
	if err != nil {
		return nil, fmt.Errorf("list sandboxes: %w", err)
	}
	view := RuntimeView{}
	for _, sb := range list.GetItems() {
		st, err := n.runtime.PodSandboxStatus(ctx, &criapi.PodSandboxStatusRequest{PodSandboxId: sb.GetId()})
		if err != nil {
			return nil, fmt.Errorf("status of sandbox %s: %w", sb.GetId(), err)
		}
		view[sb.GetId()] = st.GetStatus().GetNetwork().GetIp()
	}
	return view, nil
}

// AddressInPod reads the IPv4 address of eth0 inside the pod's network
// namespace, found through the pause process, the way an operator would
// check it with nsenter.
func (n *Node) AddressInPod(ctx context.Context, sandboxID string) (string, error) {
	st, err := n.runtime.PodSandboxStatus(ctx, &criapi.PodSandboxStatusRequest{PodSandboxId: sandboxID, Verbose: true})
	if err != nil {
		return "", fmt.Errorf("status of sandbox %s: %w", sandboxID, err)
	}
	var info struct {
		Pid int `json:"pid"`
	}
	if err := json.Unmarshal([]byte(st.GetInfo()["info"]), &info); err != nil || info.Pid == 0 {
		return "", fmt.Errorf("sandbox %s: no pause pid in verbose status (%v)", sandboxID, err)
	}
	out, err := exec.CommandContext(ctx, "nsenter", fmt.Sprintf("--net=/proc/%d/ns/net", info.Pid),
		"ip", "-4", "-o", "addr", "show", "dev", "eth0").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("read eth0 of sandbox %s: %w: %s", sandboxID, err, out)
	}
	// "2: eth0    inet 198.18.0.2/28 brd ... scope global eth0"
	fields := strings.Fields(string(out))
	for i, f := range fields {
		if f == "inet" && i+1 < len(fields) {
			return fields[i+1], nil
		}
	}
	return "", fmt.Errorf("sandbox %s: no IPv4 address on eth0: %s", sandboxID, out)
}

// LoseDEL removes a pod while making sure its CNI DEL never reaches
// ipamd, as happens when ipamd is down and the pod is force-removed after
// the runtime's retries gave up. containerd will not remove a sandbox
// whose network teardown fails, so the CNI config is swapped for a
// loopback-only one while the pod is removed, then restored (every
// runtime here reloads it: containerd and CRI-O watch the directory,
// cri-dockerd reads it again every few seconds).
func (n *Node) LoseDEL(ctx context.Context, pod fixture.Pod) error {
	confPath, original, err := n.currentConf()
	if err != nil {
		return err
	}
	noop := fmt.Appendf(nil, `{"cniVersion": "1.0.0", "name": %q, "plugins": [{"type": "loopback"}]}`, NetworkName)
	if err := writeAtomic(confPath, noop); err != nil {
		return err
	}
	defer func() { _ = writeAtomic(confPath, original) }()
	if n.CRIO != nil {
		// CRI-O (ocicni) tears a pod down with the config libcni cached
		// with its result at ADD, not the current one: without that
		// cache it falls back to the current, loopback-only config.
		cached, _ := filepath.Glob(filepath.Join(cniResultsDir, "*-"+pod.SandboxID+"-*"))
		for _, path := range cached {
			_ = os.Remove(path)
		}
	}
	// containerd reloads its CNI config when the directory changes, and
	// says nothing when it has: retry until the removal goes through with
	// the loopback-only config.
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if err := testsupport.Poll(ctx, "remove pod "+pod.Spec.Name, func(ctx context.Context) error { return n.Pods.RemovePod(ctx, pod) }); err != nil {
		return fmt.Errorf("remove pod %s with its DEL kept from ipamd: %w", pod.Spec.Name, err)
	}
	return nil
}

// cniResultsDir is where libcni caches each attachment's result and config;
// CRI-O offers no setting to move it.
const cniResultsDir = "/var/lib/cni/results"

// currentConf returns the path and content of containerd's conflist.
func (n *Node) currentConf() (string, []byte, error) {
	entries, err := os.ReadDir(n.cniConfDir)
	if err != nil {
		return "", nil, fmt.Errorf("read CNI conf dir: %w", err)
	}
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".conflist") {
			path := filepath.Join(n.cniConfDir, e.Name())
			data, err := os.ReadFile(path)
			return path, data, err
		}
	}
	return "", nil, fmt.Errorf("no .conflist in %s", n.cniConfDir)
}

func writeAtomic(path string, data []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
