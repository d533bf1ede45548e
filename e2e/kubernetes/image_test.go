package kubernetes

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sandboxipam/sandboxipam/internal/image"
	"github.com/sandboxipam/sandboxipam/internal/kubeenv"
	"github.com/sandboxipam/sandboxipam/internal/scenario"
	"github.com/sandboxipam/sandboxipam/internal/testenv"
	"github.com/sandboxipam/sandboxipam/internal/testsupport"
)

// TestImageWithoutKubelet runs the project image on the private
// containerd the way the DaemonSet does, but with ctr and crictl instead
// of kubelet: the init container's command installs the plugin, ipamd runs
// from the image with the rendered config and writes its conflist once
// ready, and a CRI pod then gets its address from it and releases it.
// The pod publishes a hostPort, reached on the node through the image's
// portmap. It needs only containerd, so it says whether the image works
// even where kubelet has not been built.
func TestImageWithoutKubelet(t *testing.T) {
	if os.Getenv("SANDBOXIPAM_E2E_KUBERNETES") == "" {
		t.Skip("set SANDBOXIPAM_E2E_KUBERNETES=1 (make e2e-kubernetes) to run")
	}
	testenv.Require(t)
	crictlBin := crictlPath(t)
	ctx := context.Background()
	dir, err := os.MkdirTemp("/tmp", "sbximg-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	ctrd, err := testenv.StartContainerd(ctx, testenv.ContainerdOptions{Dir: filepath.Join(dir, "ctd")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := ctrd.Stop(context.Background()); err != nil {
			t.Errorf("stop containerd: %v", err)
		}
	})
	emptyConfDir(t, ctrd.CNIConfDir)
	cri := crictl{binary: crictlBin, endpoint: ctrd.Endpoint}
	root, err := scenario.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	archives, err := image.BuildProjectArchives(ctx, root, filepath.Join(dir, "bin"), image.DefaultCABundle, image.DefaultRef, dir)
	if err != nil {
		t.Fatal(err)
	}
	ctr := []string{"--address", ctrd.Address, "--namespace", ctrd.Namespace}
	run(t, "ctr", append(ctr, "images", "import", archives.OCI)...)

	paths := nodePaths{
		config: filepath.Join(dir, "config"), run: filepath.Join(dir, "run"), state: filepath.Join(dir, "state"),
		cniBin: ctrd.CNIBinDir, cniConf: ctrd.CNIConfDir, runtimeSocket: ctrd.Address,
	}
	pod, confList := ipamdStaticPod(t, paths)
	for _, d := range []string{paths.run, paths.state} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// Each volume of the pod becomes a ctr bind mount at its mountPath.
	hostOf := map[string]string{}
	for _, v := range pod.Spec.Volumes {
		if v.HostPath != nil {
			hostOf[v.Name] = v.HostPath.Path
		}
	}
	mounts := func(c int, init bool) []string {
		var args []string
		ms := pod.Spec.Containers[c].VolumeMounts
		if init {
			ms = pod.Spec.InitContainers[c].VolumeMounts
		}
		for _, m := range ms {
			if src, ok := hostOf[m.Name]; ok {
				args = append(args, "--mount", fmt.Sprintf("type=bind,src=%s,dst=%s,options=rbind:rw", src, m.MountPath))
			}
		}
		return args
	}
	// The init container, as kubelet would run it, to completion.
	install := append(append(append([]string{}, ctr...), "run", "--rm", "--net-host"), mounts(0, true)...)
	install = append(append(install, image.DefaultRef, "sbx-install"), pod.Spec.InitContainers[0].Command...)
	run(t, "ctr", install...)
	if _, err := os.Stat(filepath.Join(ctrd.CNIBinDir, "sandboxipam")); err != nil {
		t.Fatalf("install-cni left no plugin: %v", err)
	}
	checkPortMapInstall(t, ctrd.CNIBinDir, filepath.Join(dir, "bin"), func() { run(t, "ctr", install...) })

	c := pod.Spec.Containers[0]
	args := append(append([]string{}, ctr...), "run", "-d", "--net-host", "--mount",
		"type=tmpfs,src=tmpfs,dst=/tmp,options=rw")
	args = append(args, mounts(0, false)...)
	// The container's securityContext, as far as ctr can say it.
	if sc := c.SecurityContext; sc != nil {
		if sc.ReadOnlyRootFilesystem != nil && *sc.ReadOnlyRootFilesystem {
			args = append(args, "--read-only")
		}
		if sc.Capabilities != nil {
			for _, d := range sc.Capabilities.Drop {
				for _, name := range capNames(string(d)) {
					args = append(args, "--cap-drop", name)
				}
			}
			for _, a := range sc.Capabilities.Add {
				for _, name := range capNames(string(a)) {
					args = append(args, "--cap-add", name)
				}
			}
		}
	}
	for _, e := range c.Env {
		if e.ValueFrom != nil {
			continue // the downward API (NODE_NAME): no Node here, and a static pool needs none
		}
		args = append(args, "--env", e.Name+"="+e.Value)
	}
	args = append(append(args, image.DefaultRef, "sbx-ipamd"), c.Command...)
	run(t, "ctr", args...)
	t.Cleanup(func() {
		_, _ = runCtx(context.Background(), "ctr", append(append([]string{}, ctr...), "task", "kill", "-s", "SIGKILL", "sbx-ipamd")...)
		for range 50 {
			if _, err := runCtx(context.Background(), "ctr", append(append([]string{}, ctr...), "task", "rm", "-f", "sbx-ipamd")...); err == nil {
				break
			}
			time.Sleep(100 * time.Millisecond) // ctr has no wait for a killed task to be removable: poll
		}
		_, _ = runCtx(context.Background(), "ctr", append(append([]string{}, ctr...), "containers", "rm", "sbx-ipamd")...)
	})
	testsupport.WaitFor(t, 2*time.Minute, "ipamd from the image writes its conflist and is ready", func(ctx context.Context) error {
		if _, err := os.Stat(confList); err != nil {
			return err
		}
		return readyz(ctx, ctrd.NetNSPath)
	})

	pid := checkNoCapabilities(t, ctr, "sbx-ipamd")

	// A CRI pod gets its address from ipamd in the image, and its hostPort
	// maps to it through the image's portmap.
	podID := runCRIPod(t, cri, dir, "web")
	pods, err := cri.pods(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var ip string
	for _, p := range pods {
		if p.ID == podID {
			ip = p.IP
			checkHostPort(t, ctrd.NetNSPath, p.PID)
		}
	}
	got := ctrIPAMPods(t, ctr, "sbx-ipamd")
	if len(got) != 1 || got[0].SandboxID != podID || got[0].IP != ip || got[0].Name != "web" {
		t.Fatalf("ipamctl pods %+v, crictl: sandbox %s IP %s", got, podID, ip)
	}
	// crictl's own 2 s default is too short on a loaded machine.
	for _, verb := range []string{"stopp", "rmp"} {
		if _, err := cri.cmd(ctx, verb, podID); err != nil {
			t.Fatal(err)
		}
	}
	if got := ctrIPAMPods(t, ctr, "sbx-ipamd"); len(got) != 0 {
		t.Fatalf("after the pod's DEL ipamd still holds %+v", got)
	}
	checkHostPortGone(t, ctrd.NetNSPath)
	// The figures behind the DaemonSet's resource requests (BENCHMARKS.md):
	// ipamd and the adapter it launched share the container's memory.
	logMemory(t, pid, "ipamd")
	for _, child := range childrenOf(pid) {
		logMemory(t, child, "ipamd's child "+child)
	}
}

// childrenOf scans /proc for the processes whose parent is pid.
func childrenOf(pid string) []string {
	entries, _ := os.ReadDir("/proc")
	var out []string
	for _, e := range entries {
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// The command name, in parentheses, may hold spaces: fields
		// after its closing parenthesis are state, then the parent.
		rest := string(stat[strings.LastIndexByte(string(stat), ')')+1:])
		if f := strings.Fields(rest); len(f) > 1 && f[1] == pid {
			out = append(out, e.Name())
		}
	}
	return out
}

func logMemory(t *testing.T, pid, what string) {
	t.Helper()
	status, err := os.ReadFile(filepath.Join("/proc", pid, "status"))
	if err != nil {
		return
	}
	var fields []string
	for _, line := range strings.Split(string(status), "\n") {
		if strings.HasPrefix(line, "Name:") || strings.HasPrefix(line, "VmHWM:") || strings.HasPrefix(line, "VmRSS:") {
			fields = append(fields, strings.Join(strings.Fields(line), " "))
		}
	}
	t.Logf("%s: %s", what, strings.Join(fields, ", "))
}

func crictlPath(t *testing.T) string {
	t.Helper()
	_, crictlBin := cachePaths()
	if err := kubeenv.Built(crictlBin); err != nil {
		t.Fatal(err)
	}
	return crictlBin
}

// runCRIPod runs a pod sandbox on the pod network through CRI, publishing
// hostPortMappings as kubelet publishes a container's hostPort.
func runCRIPod(t *testing.T, cri crictl, dir, name string) string {
	t.Helper()
	cfg := map[string]any{
		"metadata":      map[string]any{"name": name, "namespace": "default", "uid": "uid-" + name, "attempt": 0},
		"log_directory": filepath.Join(dir, "podlogs"),
		"linux":         map[string]any{},
		"port_mappings": hostPortMappings(),
	}
	b, _ := json.Marshal(cfg)
	path := filepath.Join(dir, name+"-pod.json")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := cri.cmd(context.Background(), "runp", path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(out)
}

// ctrIPAMPods runs ipamctl inside the ipamd container through ctr.
func ctrIPAMPods(t *testing.T, ctr []string, container string) []ipamPod {
	t.Helper()
	args := append(append([]string{}, ctr...), "task", "exec", "--exec-id", fmt.Sprintf("ipamctl-%d", time.Now().UnixNano()),
		container, "/usr/bin/ipamctl", "-o", "json", "pods")
	out := run(t, "ctr", args...)
	var doc struct {
		Pods []ipamPod `json:"pods"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(errors.Join(err, errors.New(out)))
	}
	return doc.Pods
}

// capNames turns a Kubernetes capability name into ctr's (CAP_ prefix).
// ctr knows no "ALL": that is every capability its default spec grants,
// and checkNoCapabilities proves none is left.
func capNames(c string) []string {
	if c == "ALL" {
		return []string{"CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_FSETID", "CAP_FOWNER", "CAP_MKNOD",
			"CAP_NET_RAW", "CAP_SETGID", "CAP_SETUID", "CAP_SETFCAP", "CAP_SETPCAP",
			"CAP_NET_BIND_SERVICE", "CAP_SYS_CHROOT", "CAP_KILL", "CAP_AUDIT_WRITE"}
	}
	return []string{"CAP_" + c}
}

// checkNoCapabilities: ipamd, ready and serving, runs with an empty
// effective and permitted capability set, as the DaemonSet asks.
func checkNoCapabilities(t *testing.T, ctr []string, container string) (pid string) {
	t.Helper()
	out := run(t, "ctr", append(append([]string{}, ctr...), "task", "ls")...)
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) >= 3 && f[0] == container {
			pid = f[1]
		}
	}
	status, err := os.ReadFile(filepath.Join("/proc", pid, "status"))
	if err != nil {
		t.Fatalf("ipamd task %q: %v", pid, err)
	}
	for _, line := range strings.Split(string(status), "\n") {
		if strings.HasPrefix(line, "CapEff:") || strings.HasPrefix(line, "CapPrm:") {
			if f := strings.Fields(line); len(f) != 2 || strings.Trim(f[1], "0") != "" {
				t.Errorf("ipamd %s, want no capabilities", line)
			}
		}
	}
	return pid
}

// checkPortMapInstall: the bin directory's portmap (testenv links
// Debian's, a symlink the init container cannot follow) is an operator's,
// kept as it is; once it is gone, the init container installs the image's
// portmap, byte for byte, and records it. The CRI pod that follows then
// maps its hostPort through the image's portmap.
func checkPortMapInstall(t *testing.T, binDir, imageBin string, install func()) {
	t.Helper()
	pm := filepath.Join(binDir, "portmap")
	if fi, err := os.Lstat(pm); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("the node's own portmap was not kept: %v %v", fi, err)
	}
	if _, err := os.Stat(filepath.Join(binDir, ".sandboxipam-portmap.sha256")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("an install record beside a portmap sandboxipam did not install: %v", err)
	}
	if err := os.Remove(pm); err != nil {
		t.Fatal(err)
	}
	install()
	got, err := os.ReadFile(pm)
	if err != nil {
		t.Fatalf("install-cni left no portmap: %v", err)
	}
	want, err := os.ReadFile(filepath.Join(imageBin, filepath.FromSlash(image.PortMapPath)))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("installed portmap (%d bytes) differs from the image's (%d bytes)", len(got), len(want))
	}
	if _, err := os.Stat(filepath.Join(binDir, ".sandboxipam-portmap.sha256")); err != nil {
		t.Fatalf("no install record for the image's portmap: %v", err)
	}
}
