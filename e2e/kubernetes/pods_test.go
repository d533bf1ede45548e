package kubernetes

import (
	"context"
	"encoding/json"
	"fmt"
	"golang.org/x/sys/unix"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	deploy "github.com/sandboxipam/sandboxipam/deploy/kubernetes"
	"github.com/sandboxipam/sandboxipam/internal/kubeenv"
)

// nodePaths are where the ipamd static pod's host paths go on the test
// node: everything private to the test, nothing under /run, /var/lib,
// /opt or /etc of the host.
type nodePaths struct {
	config, run, state, cniBin, cniConf, runtimeSocket string
	// netns is the runtime's pod network namespace directory, which ipamd
	// mounts at the same path (the one CNI records); "" is an empty
	// directory beside state, so no test makes the host's /run/netns.
	netns string
}

// ipamdStaticPod turns the static-one-node overlay's DaemonSet pod template
// into a static pod (ipamdStaticPodFrom).
func ipamdStaticPod(t *testing.T, paths nodePaths) (*corev1.Pod, string) {
	t.Helper()
	return ipamdStaticPodFrom(t, renderOverlay(t, oneNodeOverlay), paths)
}

// ipamdStaticPodFrom turns a rendered overlay's DaemonSet pod template
// into a static pod. Only what a node without an API server needs changes
// beyond nodePodSpec: the ConfigMap volume becomes a host directory holding
// the same ipamd.yaml, and the service account goes. Containers, probes, hooks, security contexts and
// resources are the rendered ones.
func ipamdStaticPodFrom(t *testing.T, r deploy.Rendered, paths nodePaths) (*corev1.Pod, string) {
	t.Helper()
	if err := os.MkdirAll(paths.config, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(paths.config, "ipamd.yaml"), []byte(r.ConfigMap.Data["ipamd.yaml"]), 0o644); err != nil {
		t.Fatal(err)
	}
	tmpl := r.DaemonSet.Spec.Template
	pod := &corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: "sandboxipam", Namespace: r.DaemonSet.Namespace, Labels: tmpl.Labels},
		Spec:       *tmpl.Spec.DeepCopy(),
	}
	// kubelet refuses a static pod that names a service account ("static
	// pods may not reference serviceaccounts"); ipamd mounts no token.
	pod.Spec.ServiceAccountName, pod.Spec.DeprecatedServiceAccount = "", ""
	noToken := false
	pod.Spec.AutomountServiceAccountToken = &noToken
	for i, v := range pod.Spec.Volumes {
		if v.ConfigMap != nil {
			dir := corev1.HostPathDirectory
			pod.Spec.Volumes[i].VolumeSource = corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: paths.config, Type: &dir}}
		}
	}
	confList := nodePodSpec(t, &pod.Spec, paths)
	return pod, confList
}

// nodePodSpec points the DaemonSet pod spec's host paths at the test's
// directories, so that nothing under /run, /var/lib, /opt or /etc of the
// host is touched: the socket directory at the same path inside, as the
// CNI plugin on the host dials what ipamd writes in the conflist. The
// reconciler runs often enough for a test. It returns the conflist's path
// on the node.
func nodePodSpec(t *testing.T, spec *corev1.PodSpec, paths nodePaths) string {
	t.Helper()
	hostPaths := map[string]string{
		"run": paths.run, "state": paths.state, "cni-bin": paths.cniBin,
		"cni-conf": paths.cniConf, "runtime-socket": paths.runtimeSocket,
	}
	if paths.config != "" {
		// ipamdStaticPod made the ConfigMap volume a host directory.
		hostPaths["config"] = paths.config
	}
	if hostPaths["netns"] = paths.netns; paths.netns == "" {
		hostPaths["netns"] = filepath.Join(filepath.Dir(paths.state), "netns")
		if err := os.MkdirAll(hostPaths["netns"], 0o755); err != nil {
			t.Fatal(err)
		}
	}
	sharedMountPoint(t, hostPaths["netns"])
	for i, v := range spec.Volumes {
		if v.HostPath == nil {
			continue
		}
		p, ok := hostPaths[v.Name]
		if !ok {
			t.Fatalf("the DaemonSet mounts host path %q (volume %s) the test does not know", v.HostPath.Path, v.Name)
		}
		spec.Volumes[i].HostPath.Path = p
	}
	c := &spec.Containers[0]
	for i, m := range c.VolumeMounts {
		switch m.Name {
		case "run":
			c.VolumeMounts[i].MountPath = paths.run
		case "netns":
			c.VolumeMounts[i].MountPath = hostPaths["netns"]
		}
	}
	c.Env = append(c.Env,
		corev1.EnvVar{Name: "IPAMD_SOCKET", Value: filepath.Join(paths.run, "ipamd.sock")},
		corev1.EnvVar{Name: "IPAMD_RECONCILE_INTERVAL", Value: "2s"},
		corev1.EnvVar{Name: "IPAMD_RECONCILE_GRACE", Value: "3s"},
	)
	confList := ""
	for _, e := range c.Env {
		if e.Name == "IPAMD_CNI_CONFLISTPATH" {
			confList = e.Value
		}
	}
	if confList == "" {
		confList = "/host/etc/cni/net.d/10-sandboxipam.conflist"
	}
	return filepath.Join(paths.cniConf, filepath.Base(confList))
}

// appPod is a plain pod on the pod network: the pause image as its app.
func appPod(name, image string) *corev1.Pod {
	grace := int64(1)
	return &corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: corev1.PodSpec{
			TerminationGracePeriodSeconds: &grace,
			Containers: []corev1.Container{{
				Name: "app", Image: image, ImagePullPolicy: corev1.PullNever,
			}},
		},
	}
}

// writeManifest writes a static pod manifest atomically: kubelet never
// reads half a file (it ignores names starting with a dot).
func writeManifest(t *testing.T, dir string, pod *corev1.Pod) string {
	t.Helper()
	data, err := json.MarshalIndent(pod, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, pod.Name+".json")
	tmp := filepath.Join(dir, "."+pod.Name+".tmp")
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// criPod is one sandbox as crictl reports it.
type criPod struct {
	ID, Name, Namespace, State string
	IP                         string
	// IPs are every address of the sandbox, IP first; PID is its pause
	// process, in the host's PID namespace.
	IPs []string
	PID int
}

type crictl struct {
	binary, endpoint string
}

func (c crictl) cmd(ctx context.Context, args ...string) (string, error) {
	return runCtx(ctx, c.binary, append([]string{"--runtime-endpoint", c.endpoint, "--image-endpoint", c.endpoint, "--timeout", "30s"}, args...)...)
}

// pods lists every sandbox, with its IP from crictl inspectp.
func (c crictl) pods(ctx context.Context) ([]criPod, error) {
	out, err := c.cmd(ctx, "pods", "-o", "json")
	if err != nil {
		return nil, err
	}
	var list struct {
		Items []struct {
			ID       string `json:"id"`
			State    string `json:"state"`
			Metadata struct {
				Name, Namespace string
			} `json:"metadata"`
		} `json:"items"`
	}
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		return nil, fmt.Errorf("crictl pods: %w", err)
	}
	var pods []criPod
	for _, it := range list.Items {
		p := criPod{ID: it.ID, Name: it.Metadata.Name, Namespace: it.Metadata.Namespace, State: it.State}
		if it.State == "SANDBOX_READY" {
			out, err := c.cmd(ctx, "inspectp", "-o", "json", it.ID)
			if err != nil {
				return nil, err
			}
			var st struct {
				Status struct {
					Network struct {
						IP            string `json:"ip"`
						AdditionalIPs []struct {
							IP string `json:"ip"`
						} `json:"additionalIps"`
					} `json:"network"`
				} `json:"status"`
				Info struct {
					PID int `json:"pid"`
				} `json:"info"`
			}
			if err := json.Unmarshal([]byte(out), &st); err != nil {
				return nil, fmt.Errorf("crictl inspectp: %w", err)
			}
			p.IP, p.PID = st.Status.Network.IP, st.Info.PID
			if p.IP != "" {
				p.IPs = append(p.IPs, p.IP)
			}
			for _, a := range st.Status.Network.AdditionalIPs {
				p.IPs = append(p.IPs, a.IP)
			}
		}
		pods = append(pods, p)
	}
	return pods, nil
}

// runningContainer returns the ID and PID of the running container name.
func (c crictl) runningContainer(ctx context.Context, name string) (id string, pid int, err error) {
	out, err := c.cmd(ctx, "ps", "--name", "^"+name+"$", "--state", "running", "-q", "--no-trunc")
	if err != nil {
		return "", 0, err
	}
	ids := strings.Fields(out)
	if len(ids) != 1 {
		return "", 0, fmt.Errorf("%d running %s containers", len(ids), name)
	}
	out, err = c.cmd(ctx, "inspect", "-o", "json", ids[0])
	if err != nil {
		return "", 0, err
	}
	var info struct {
		Info struct {
			Pid int `json:"pid"`
		} `json:"info"`
	}
	if err := json.Unmarshal([]byte(out), &info); err != nil {
		return "", 0, fmt.Errorf("crictl inspect: %w", err)
	}
	return ids[0], info.Info.Pid, nil
}

// ipamPod is one assignment as "ipamctl -o json pods" reports it.
type ipamPod struct {
	SandboxID string   `json:"sandboxID"`
	Name      string   `json:"name"`
	Namespace string   `json:"namespace"`
	IP        string   `json:"ip"`
	IPs       []string `json:"ips"`
}

// ipamctlPods runs ipamctl inside the ipamd container, as an operator
// does with kubectl exec.
func ipamctlPods(ctx context.Context, cri crictl, ipamdID string) ([]ipamPod, error) {
	out, err := cri.cmd(ctx, "exec", "--sync", ipamdID, "/usr/bin/ipamctl", "-o", "json", "pods")
	if err != nil {
		return nil, err
	}
	var doc struct {
		Pods []ipamPod `json:"pods"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		return nil, fmt.Errorf("ipamctl pods: %w: %s", err, out)
	}
	sort.Slice(doc.Pods, func(i, j int) bool { return doc.Pods[i].Name < doc.Pods[j].Name })
	return doc.Pods, nil
}

// httpInNetNS GETs url from inside the network namespace at nsPath (ipamd
// listens on that namespace's loopback).
func httpInNetNS(ctx context.Context, nsPath, url string) (int, string, error) {
	client := &http.Client{Transport: &http.Transport{DialContext: netnsDialer(nsPath), DisableKeepAlives: true}, Timeout: 5 * time.Second}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, "", err
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	var body strings.Builder
	buf := make([]byte, 4096)
	n, _ := resp.Body.Read(buf)
	body.Write(buf[:n])
	return resp.StatusCode, body.String(), nil
}

// netnsDialer dials from inside the network namespace at nsPath, where
// ipamd (hostNetwork) and the test cluster's control plane listen on
// loopback.
func netnsDialer(nsPath string) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return kubeenv.NetNSDialer(nsPath)
}

// followLogs copies a container's log (crictl logs -f) to a file in dir
// until the container ends, and prints its tail if the test fails: kubelet
// deletes a removed pod's logs, and ipamd's last words are the ones that
// explain a failure at its stop.
func followLogs(t *testing.T, cri crictl, id, dir string) {
	t.Helper()
	path := filepath.Join(dir, "container-"+id[:12]+".log")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(cri.binary, "--runtime-endpoint", cri.endpoint, "logs", "-f", id)
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		f.Close()
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); f.Close(); close(done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-done
		if t.Failed() {
			if b, err := os.ReadFile(path); err == nil {
				t.Logf("container %s log (last 4 KiB):\n%s", id[:12], tail(b, 4096))
			}
		}
	})
}

// removeSandboxes removes every sandbox the runtime still has once kubelet
// is gone. containerd 1.6 tears a pod's network down again on every stop
// and remove, even of a sandbox kubelet already stopped, and fails with
// "cni plugin not initialized" when no conflist is left, or fails the DEL
// when a conflist outlived ipamd. So whatever the conflist directory holds
// is replaced by a loopback-only stand-in of the same network: the DELs
// succeed and libcni drops the results it cached on the host
// (/var/lib/cni/results). Whether ipamd saw its DELs was checked before.
func removeSandboxes(t *testing.T, cri crictl, confDir string) {
	t.Helper()
	entries, _ := os.ReadDir(confDir)
	for _, e := range entries {
		_ = os.Remove(filepath.Join(confDir, e.Name()))
	}
	standIn := filepath.Join(confDir, "10-sandboxipam.conflist")
	noop := `{"cniVersion": "1.0.0", "name": "sandboxipam", "plugins": [{"type": "loopback"}]}`
	if err := os.WriteFile(standIn, []byte(noop), 0o644); err != nil {
		t.Error(err)
		return
	}
	defer os.Remove(standIn)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var last error
	for ctx.Err() == nil {
		pods, err := cri.pods(ctx)
		if err == nil && len(pods) == 0 {
			return
		}
		last = err
		for _, p := range pods {
			if _, err := cri.cmd(ctx, "rmp", "--force", p.ID); err != nil {
				last = err
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(500 * time.Millisecond): // containerd picks the stand-in up asynchronously
		}
	}
	t.Errorf("sandboxes left after kubelet: %v", last)
}

// sharedMountPoint makes dir a shared bind mount of itself, as iproute2
// does with /run/netns and as every directory is on a systemd host: the
// DaemonSet mounts the netns directory HostToContainer (rslave), which
// containerd refuses on a private mount, and this machine's / is private.
// The bind goes when the test ends.
func sharedMountPoint(t *testing.T, dir string) {
	t.Helper()
	if err := unix.Mount(dir, dir, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		t.Fatalf("bind %s: %v", dir, err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(dir, unix.MNT_DETACH); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
	if err := unix.Mount("", dir, "", unix.MS_SHARED, ""); err != nil {
		t.Fatalf("make %s shared: %v", dir, err)
	}
}
