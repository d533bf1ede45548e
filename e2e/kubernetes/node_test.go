package kubernetes

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sandboxipam/sandboxipam/internal/testenv"
	"github.com/sandboxipam/sandboxipam/internal/testsupport"
)

// nodePrivateDirs are the directories each node has of its own, on the
// host's disk (cAdvisor wants a real block device under kubelet's root and
// logs): the node path, and the name of its backing directory under the
// node's dir. From the host the test reads and writes them there.
var nodePrivateDirs = []struct{ path, name string }{
	{"/var/lib/kubelet", "var-lib-kubelet"},
	{"/var/log", "var-log"},
	{"/etc/cni/net.d", "cni-conf"},
	{"/opt/cni/bin", "cni-bin"},
	{"/var/lib/cni", "var-lib-cni"},
	{"/var/lib/sandboxipam", "sandboxipam-state"},
}

// clusterNode is one node of the test cluster: a network namespace, a
// mount namespace held by a shell, and containerd and kubelet inside both.
type clusterNode struct {
	index  int
	name   string
	dir    string // everything of the node, on the host
	netns  string
	v4, v6 netip.Addr
	shell  *exec.Cmd
	ctrd   *testenv.Containerd
	cri    crictl
	kube   *kubelet
	kopts  kubeletOptions
}

// private is the host path of the node's own directory at nodePath.
func (n *clusterNode) private(nodePath string) string {
	for _, d := range nodePrivateDirs {
		if d.path == nodePath {
			return filepath.Join(n.dir, "fs", d.name)
		}
	}
	panic("no private directory for " + nodePath)
}

// staticPods is the node kubelet's static pod directory, on the host.
func (n *clusterNode) staticPods() string { return filepath.Join(n.dir, "static-pods") }

func (n *clusterNode) mountNS() string { return fmt.Sprintf("/proc/%d/ns/mnt", n.shell.Process.Pid) }

// nodeShellScript sets up the node's mount namespace and then holds it:
// overlays over /etc, /var and /opt (their upper dirs under the node's
// dir, so nothing is created on the host), a tmpfs on /run, the node's
// private directories, its own machine-id, and stand-ins over the sysctls
// kubelet writes. The runtime socket ipamd's DaemonSet mounts
// (/run/containerd/containerd.sock) is a link to the node's containerd.
func nodeShellScript(dir, ready string) string {
	s := []string{"set -e",
		// Other tests' mounts under /tmp, copied into this namespace,
		// would hold their file systems until the node goes.
		fmt.Sprintf("findmnt -rn -o TARGET | grep '^/tmp/' | grep -v '^%s' | sort -r | while read -r m; do umount -l \"$m\" || true; done", dir)}
	for _, d := range []string{"etc", "var", "opt"} {
		up, work := filepath.Join(dir, "overlay", d, "upper"), filepath.Join(dir, "overlay", d, "work")
		s = append(s, fmt.Sprintf("mkdir -p %q %q", up, work),
			fmt.Sprintf("mount -t overlay overlay -o lowerdir=/%s,upperdir=%s,workdir=%s /%s", d, up, work, d))
	}
	// /run shared, as systemd leaves every mount of a host: the
	// runtime's pod network namespaces, bound under /run/netns after
	// ipamd started, then reach ipamd's HostToContainer mount.
	// /var shared too: containerd checks the mount that holds the path
	// ipamd mounts (/var/run/netns, found on the /var overlay) and refuses
	// a HostToContainer mount from a private one.
	s = append(s, "mount -t tmpfs -o mode=0755 tmpfs /run", "mount --make-shared /run", "mount --make-shared /var")
	for _, d := range nodePrivateDirs {
		src := filepath.Join(dir, "fs", d.name)
		s = append(s, fmt.Sprintf("mkdir -p %q %q", src, d.path), fmt.Sprintf("mount --bind %q %q", src, d.path))
	}
	s = append(s, fmt.Sprintf("touch /etc/machine-id && mount --bind %q /etc/machine-id", filepath.Join(dir, "machine-id")))
	for _, p := range hostSysctls {
		s = append(s, fmt.Sprintf("mount --bind %q %q", filepath.Join(dir, "sysctl", filepath.Base(p)), p))
	}
	// The socket's path comes in the environment: testenv kills every
	// process whose command line names containerd's directory.
	s = append(s, "mkdir -p /run/containerd", `ln -s "$SBX_CONTAINERD_SOCKET" /run/containerd/containerd.sock`,
		fmt.Sprintf("touch %q", ready), "exec sleep infinity")
	return strings.Join(s, "\n")
}

// startNodeShell starts the process that holds node n's mount namespace:
// nsenter --net=NETNS unshare --mount --propagation private (not "ip netns
// exec", which remounts /sys and hides the cgroup hierarchies).
func startNodeShell(t *testing.T, n *clusterNode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(n.dir, "sysctl"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, p := range hostSysctls {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(n.dir, "sysctl", filepath.Base(p)), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(n.dir, "machine-id"), []byte(fmt.Sprintf("%032x\n", 0x5b1a0000+n.index)), 0o444); err != nil {
		t.Fatal(err)
	}
	ready := filepath.Join(n.dir, "shell-ready")
	log, err := os.Create(filepath.Join(n.dir, "shell.log"))
	if err != nil {
		t.Fatal(err)
	}
	n.shell = exec.Command("nsenter", "--net="+n.netns, "--", "unshare", "--mount", "--propagation", "private", "--",
		"sh", "-c", nodeShellScript(n.dir, ready))
	n.shell.Env = append(os.Environ(), "SBX_CONTAINERD_SOCKET="+filepath.Join(n.dir, "ctd", "containerd.sock"))
	n.shell.Stdout, n.shell.Stderr = log, log
	n.shell.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := n.shell.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = n.shell.Wait(); log.Close(); close(exited) }()
	// The namespace and its mounts go with its last process: the shell
	// goes after containerd and kubelet (cleanups run last-in first-out).
	t.Cleanup(func() {
		select {
		case <-exited:
			b, _ := os.ReadFile(log.Name())
			t.Errorf("%s's shell exited before its end (%v): %s", n.name, n.shell.ProcessState, b)
		default:
		}
		_ = syscall.Kill(-n.shell.Process.Pid, syscall.SIGKILL)
		<-exited
	})
	testsupport.WaitFor(t, time.Minute, n.name+"'s shell set up its mounts", func(context.Context) error {
		select {
		case <-exited:
			b, _ := os.ReadFile(log.Name())
			t.Fatalf("%s's shell exited: %s", n.name, b)
		default:
		}
		_, err := os.Stat(ready)
		return err
	})
}

// startNode brings up node i (1-based) of the cluster: its namespaces,
// containerd with the project's image, and kubelet registered to the API
// server. kubeletBin, crictlBin and kubeconfig are the cluster's.
func startNode(t *testing.T, dir, hubNS string, i int, bins nodeBinaries) *clusterNode {
	t.Helper()
	n := &clusterNode{index: i, name: fmt.Sprintf("sbx-node%d", i), dir: filepath.Join(dir, fmt.Sprintf("n%d", i))}
	n.v4, n.v6 = nodeAddrs(i)
	n.netns = filepath.Join(n.dir, "netns")
	if err := os.MkdirAll(n.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	plugNode(t, hubNS, n.netns, i)
	startNodeShell(t, n)
	// After containerd stopped (cleanups run last-in first-out).
	cgroupRoot := "/" + filepath.Base(dir) + "-" + n.name
	t.Cleanup(func() { removeCgroupRoot(t, cgroupRoot) })
	ctrd, err := testenv.StartContainerd(context.Background(), testenv.ContainerdOptions{
		Dir:    filepath.Join(n.dir, "ctd"),
		InNode: &testenv.NodeNamespaces{NetNS: n.netns, MountNS: n.mountNS()},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := ctrd.Stop(context.Background()); err != nil {
			t.Errorf("stop %s's containerd: %v", n.name, err)
		}
	})
	n.ctrd = ctrd
	n.cri = crictl{binary: bins.crictl, endpoint: ctrd.Endpoint}
	// After kubelet, before containerd.
	t.Cleanup(func() { removeSandboxes(t, n.cri, n.private("/etc/cni/net.d")) })
	// The reference plugins, as a node's /opt/cni/bin holds them
	// (loopback for the stand-in conflist at teardown, bridge and
	// host-local for the benchmark).
	for _, p := range []string{"bridge", "host-local", "loopback"} {
		if err := os.Symlink(filepath.Join(testenv.DefaultCNIBinDir, p), filepath.Join(n.private("/opt/cni/bin"), p)); err != nil {
			t.Fatal(err)
		}
	}
	run(t, "ctr", "--address", ctrd.Address, "--namespace", ctrd.Namespace, "images", "import", bins.imageArchive)
	// An empty static pod directory: the pool test runs static pods while
	// the API server is down.
	if err := os.MkdirAll(n.staticPods(), 0o755); err != nil {
		t.Fatal(err)
	}
	n.kopts = kubeletOptions{
		binary: bins.kubelet, dir: filepath.Join(n.dir, "kubelet"), criEndpoint: ctrd.Endpoint,
		netnsPath: n.netns, nodeName: n.name, kubeconfig: bins.kubeconfig, staticPodDir: n.staticPods(),
		node: &kubeletNode{mountNS: n.mountNS(), nodeIPs: n.v4.String() + "," + n.v6.String(), address: n.v4.String(), cgroupRoot: cgroupRoot},
	}
	n.kube = startKubelet(t, n.kopts)
	return n
}

// nodeBinaries are what every node runs: kubelet, crictl, the project's
// image archive, and the kubeconfig of the cluster.
type nodeBinaries struct {
	kubelet, crictl, imageArchive, kubeconfig string
}

// restartKubelet stops node n's kubelet and starts another with the same
// options; the node's pods run on meanwhile.
func (n *clusterNode) restartKubelet(t *testing.T) {
	t.Helper()
	n.kube.restartInNode(t)
}

// removeCgroupRoot removes a kubelet's cgroup root from every hierarchy,
// and from the cgroup v2 one a hybrid host mounts at unified.
func removeCgroupRoot(t *testing.T, root string) {
	for _, h := range append(cgroupHierarchies(t), "/sys/fs/cgroup/unified") {
		dir := filepath.Join(h, root)
		removeCgroupTree(dir)
		if _, err := os.Stat(dir); err == nil {
			t.Errorf("cgroup %s left behind", dir)
		}
	}
}
