package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// hostSysctls are the settings kubelet would change on the host; the
// test compares them before and after.
var hostSysctls = []string{
	"/proc/sys/kernel/panic",
	"/proc/sys/kernel/panic_on_oops",
	"/proc/sys/vm/overcommit_memory",
}

// hardCodedDirs are written by kubelet whatever --root-dir says.
var hardCodedDirs = []string{"/var/lib/kubelet", "/var/log/containers"}

func readSysctls(t *testing.T) map[string]string {
	t.Helper()
	values := map[string]string{}
	for _, p := range hostSysctls {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		values[p] = strings.TrimSpace(string(b))
	}
	return values
}

// kubeletOptions say what the standalone kubelet runs against.
type kubeletOptions struct {
	binary       string // the kubelet binary
	dir          string // everything of this kubelet lives here
	criEndpoint  string // unix://...
	netnsPath    string // the network namespace it runs in
	staticPodDir string // "" for none
	nodeName     string
	// kubeconfig registers the kubelet with an API server; "" runs it
	// standalone.
	kubeconfig string
	// node, when set, runs kubelet inside a test cluster's node (its
	// mount namespace already holds the stand-ins and private
	// directories); nil runs it as the one-node tests do.
	node *kubeletNode
}

// kubeletNode is where a cluster node's kubelet runs and what it says
// about itself.
type kubeletNode struct {
	mountNS    string // path of the node's mount namespace
	nodeIPs    string // --node-ip, both families
	address    string // the node's IPv4 address: kubelet's API listens there
	cgroupRoot string // distinct per node
}

// kubelet is a running standalone kubelet.
type kubelet struct {
	opts       kubeletOptions
	cmd        *exec.Cmd
	exited     chan struct{}
	log        *os.File
	cgroupRoot string
	createdVar bool // /var/lib/kubelet did not exist before
}

func (k *kubelet) rootDir() string { return filepath.Join(k.opts.dir, "root") }

// kubeletConfig is the KubeletConfiguration for a test node on these
// machines (cgroup v1, no systemd, root without CAP_SYS_RESOURCE); each
// setting is here because kubelet failed without it (see RUNTIMES notes in
// the package doc).
func (k *kubelet) config() string {
	staticPods := ""
	if k.opts.staticPodDir != "" {
		staticPods = "staticPodPath: " + k.opts.staticPodDir
	}
	address, maxPods, dns := "127.0.0.1", 110, ""
	if k.opts.node != nil {
		// The benchmark runs 110 pods on one node beside ipamd.
		address, maxPods = k.opts.node.address, 120
		// The conformance suite's CoreDNS; the other tests run none and
		// never resolve a name.
		dns = "clusterDNS: [" + clusterDNSIP + "]\nclusterDomain: cluster.local"
	}
	return fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
%[1]s
fileCheckFrequency: 1s
syncFrequency: 5s
containerRuntimeEndpoint: %[2]s
imageServiceEndpoint: %[2]s
failCgroupV1: false
cgroupDriver: cgroupfs
cgroupRoot: %[3]s
oomScoreAdj: 0
makeIPTablesUtilChains: false
address: %[6]s
healthzBindAddress: 127.0.0.1
readOnlyPort: 0
authentication:
  anonymous:
    enabled: true
  webhook:
    enabled: false
authorization:
  mode: AlwaysAllow
evictionHard: {}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
failSwapOn: false
maxPods: %[7]d
protectKernelDefaults: false
resolvConf: ""
volumePluginDir: %[4]s
podLogsDir: %[5]s
%[8]s
`, staticPods, k.opts.criEndpoint, k.cgroupRoot,
		filepath.Join(k.opts.dir, "volume-plugins"), filepath.Join(k.opts.dir, "pod-logs"), address, maxPods, dns)
}

// startKubelet starts kubelet in its own mount namespace and in
// opts.netnsPath, and registers its teardown.
func startKubelet(t *testing.T, opts kubeletOptions) *kubelet {
	t.Helper()
	// The cgroup root is named after the test's own directory, so two
	// runs never share one and teardown removes only its own.
	k := &kubelet{opts: opts, exited: make(chan struct{}), cgroupRoot: kubeletCgroupRoot(filepath.Dir(opts.dir))}
	for _, d := range []string{k.rootDir(), filepath.Join(opts.dir, "certs"), filepath.Join(opts.dir, "sysctl"), filepath.Join(opts.dir, "pod-logs")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if opts.node != nil {
		k.cgroupRoot = opts.node.cgroupRoot
	}
	t.Cleanup(func() { k.teardown(t) })
	k.makeCgroupRoot(t)
	config := filepath.Join(opts.dir, "kubelet.yaml")
	if err := os.WriteFile(config, []byte(k.config()), 0o644); err != nil {
		t.Fatal(err)
	}
	if opts.node != nil {
		k.startInNode(t, config)
		return k
	}
	// The root dir is a shared mount: what kubelet mounts there in its
	// own namespace (volumes) reaches containerd in the host's.
	run(t, "mount", "--bind", k.rootDir(), k.rootDir())
	run(t, "mount", "--make-shared", k.rootDir())
	if _, err := os.Stat("/var/lib/kubelet"); errors.Is(err, os.ErrNotExist) {
		if err := os.Mkdir("/var/lib/kubelet", 0o755); err != nil {
			t.Fatal(err)
		}
		k.createdVar = true
	}
	script := []string{"set -e"}
	// On a host whose / or /proc is a shared mount (systemd's default)
	// the copies in this namespace would pass the stand-ins and tmpfs
	// below back to the host: make the mounts they land on receive-only.
	// The root dir is a mount of its own and stays shared.
	for _, p := range append(slices.Clone(hostSysctls), "/var/lib/kubelet", "/var/log") {
		script = append(script, fmt.Sprintf("mount --make-slave \"$(findmnt -n -o TARGET -T %q)\"", p))
	}
	for _, p := range hostSysctls {
		standIn := filepath.Join(opts.dir, "sysctl", filepath.Base(p))
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(standIn, b, 0o644); err != nil {
			t.Fatal(err)
		}
		script = append(script, fmt.Sprintf("mount --bind %q %q", standIn, p))
	}
	// The node's only address in its namespace is loopback (where the
	// API server listens too): without --node-ip kubelet looks for a
	// default route and finds none.
	command := fmt.Sprintf("exec nsenter --net=%q %q --config=%q --root-dir=%q --cert-dir=%q --hostname-override=%q --node-ip=127.0.0.1 --v=2",
		opts.netnsPath, opts.binary, config, k.rootDir(), filepath.Join(opts.dir, "certs"), opts.nodeName)
	if opts.kubeconfig != "" {
		command += fmt.Sprintf(" --kubeconfig=%q", opts.kubeconfig)
	}
	script = append(script,
		"mount -t tmpfs tmpfs /var/lib/kubelet",
		"mount -t tmpfs tmpfs /var/log",
		command)
	log, err := os.Create(filepath.Join(opts.dir, "kubelet.log"))
	if err != nil {
		t.Fatal(err)
	}
	k.log = log
	// --propagation unchanged keeps the root dir shared; / and /proc are
	// private here, so the stand-ins and tmpfs never reach the host.
	k.start(t, exec.Command("unshare", "--mount", "--propagation", "unchanged", "--", "sh", "-c", strings.Join(script, "\n")))
	return k
}

// startInNode runs kubelet in a cluster node's network and mount
// namespaces, where the node's shell put the stand-ins over the sysctls
// and its private /var/lib/kubelet and /var/log.
func (k *kubelet) startInNode(t *testing.T, config string) {
	t.Helper()
	n := k.opts.node
	argv := []string{"--net=" + k.opts.netnsPath, "--mount=" + n.mountNS, "--", k.opts.binary,
		"--config=" + config, "--root-dir=" + k.rootDir(), "--cert-dir=" + filepath.Join(k.opts.dir, "certs"),
		"--hostname-override=" + k.opts.nodeName, "--node-ip=" + n.nodeIPs, "--kubeconfig=" + k.opts.kubeconfig, "--v=2"}
	// Appended to: a restarted kubelet's log follows its predecessor's.
	log, err := os.OpenFile(filepath.Join(k.opts.dir, "kubelet.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	k.log = log
	k.start(t, exec.Command("nsenter", argv...))
}

// restartInNode stops a cluster node's kubelet and starts another with
// the same options, under the same teardown; the node's pods run on.
func (k *kubelet) restartInNode(t *testing.T) {
	t.Helper()
	k.stop()
	k.log.Close()
	k.exited = make(chan struct{})
	k.startInNode(t, filepath.Join(k.opts.dir, "kubelet.yaml"))
}

// start starts cmd as the kubelet, its output in k.log.
func (k *kubelet) start(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	k.cmd = cmd
	k.cmd.Stdout, k.cmd.Stderr = k.log, k.log
	k.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := k.cmd.Start(); err != nil {
		t.Fatalf("start kubelet: %v", err)
	}
	go func() { _ = k.cmd.Wait(); close(k.exited) }()
	t.Logf("kubelet %s started (pid %d), log %s", k.opts.nodeName, k.cmd.Process.Pid, k.log.Name())
}

// makeCgroupRoot creates the kubelet's cgroup root in every v1 hierarchy,
// as kubelet requires of a custom root; cpuset needs its cpus and mems.
func (k *kubelet) makeCgroupRoot(t *testing.T) {
	t.Helper()
	for _, h := range cgroupHierarchies(t) {
		dir := filepath.Join(h, k.cgroupRoot)
		if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
			t.Fatal(err)
		}
		if filepath.Base(h) == "cpuset" {
			for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
				b, err := os.ReadFile(filepath.Join(h, f))
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
}

func cgroupHierarchies(t *testing.T) []string {
	t.Helper()
	entries, err := os.ReadDir("/sys/fs/cgroup")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		p := filepath.Join("/sys/fs/cgroup", e.Name())
		if !e.IsDir() || e.Name() == "unified" {
			continue
		}
		if _, err := os.Stat(filepath.Join(p, "cgroup.procs")); err == nil {
			out = append(out, p)
		}
	}
	return out
}

// stop ends kubelet (SIGTERM, then SIGKILL) and waits for it.
func (k *kubelet) stop() {
	if k.cmd == nil || k.cmd.Process == nil {
		return
	}
	_ = syscall.Kill(-k.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-k.exited:
	case <-time.After(20 * time.Second):
		_ = syscall.Kill(-k.cmd.Process.Pid, syscall.SIGKILL)
		<-k.exited
	}
}

// teardown stops kubelet and removes what it left on the host: its root
// dir mounts and /var/lib/kubelet if the test created it. Its cgroups go
// later (removeKubeletCgroups), once the runtime has no pod left in them.
func (k *kubelet) teardown(t *testing.T) {
	k.stop()
	if k.log != nil {
		k.log.Close()
		if t.Failed() {
			if b, err := os.ReadFile(k.log.Name()); err == nil {
				t.Logf("kubelet log (last 4 KiB):\n%s", tail(b, 4096))
			}
		}
	}
	if k.opts.node == nil {
		_ = exec.Command("umount", "--recursive", "--lazy", k.rootDir()).Run()
	}
	if k.createdVar {
		if err := os.Remove("/var/lib/kubelet"); err != nil {
			t.Errorf("remove /var/lib/kubelet: %v", err)
		}
	}
}

// kubeletCgroupRoot is the cgroup root of the kubelet a test started
// under testDir: named after the test's own directory, so two runs never
// share one and clean-up removes only its own.
func kubeletCgroupRoot(testDir string) string {
	return "/" + filepath.Base(testDir) + "-kubelet"
}

// removeKubeletCgroups removes the cgroup tree of the kubelet started
// under testDir from every hierarchy; register it before the runtime
// starts, so that it runs after the runtime stopped every pod in it.
// kubelet also makes its root in the cgroup v2 hierarchy a hybrid host
// mounts at unified, where the test made none.
func removeKubeletCgroups(t *testing.T, testDir string) {
	for _, h := range append(cgroupHierarchies(t), "/sys/fs/cgroup/unified") {
		dir := filepath.Join(h, kubeletCgroupRoot(testDir))
		removeCgroupTree(dir)
		if _, err := os.Stat(dir); err == nil {
			t.Errorf("cgroup %s left behind", dir)
		}
	}
}

// removeCgroupTree removes a cgroup directory, children first (cgroupfs
// directories hold only control files, which rmdir takes along).
func removeCgroupTree(dir string) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if e.IsDir() {
			removeCgroupTree(filepath.Join(dir, e.Name()))
		}
	}
	_ = syscall.Rmdir(dir)
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}

// run runs a command and fails the test with its output on error.
func run(t *testing.T, name string, args ...string) string {
	t.Helper()
	out, err := runCtx(context.Background(), name, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func runCtx(ctx context.Context, name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return string(out), fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, stderr.String())
	}
	return string(out), nil
}
