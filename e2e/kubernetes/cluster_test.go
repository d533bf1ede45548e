package kubernetes

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stypes "k8s.io/apimachinery/pkg/types"

	"github.com/sandboxipam/sandboxipam/conformance/fixture"
	deploy "github.com/sandboxipam/sandboxipam/deploy/kubernetes"
	"github.com/sandboxipam/sandboxipam/internal/kubeenv"
	"github.com/sandboxipam/sandboxipam/internal/testenv"
	"github.com/sandboxipam/sandboxipam/internal/testsupport"
	introspect "github.com/sandboxipam/sandboxipam/ipamd/introspect/schema"
)

// The Deployment the cluster test runs on the node.
const (
	webName     = "web"
	webReplicas = 10
)

// TestOneNodeCluster brings up a one-node cluster on 127.0.0.1 (etcd,
// kube-apiserver, kube-controller-manager, kube-scheduler, and a kubelet
// registered to it against the private containerd), applies the
// static-one-node overlay as "kubectl apply -k" would, and checks what
// ipamd holds against the API server and the runtime while a Deployment of
// ten pods runs, loses half its pods, outlives a rolling update of the
// DaemonSet and is scaled to zero.
func TestOneNodeCluster(t *testing.T) {
	kubeletBin, crictlBin := requireE2E(t)
	bins := kubeenv.BinariesIn(cacheDir())
	if err := bins.Missing(); err != nil {
		t.Fatal(err)
	}
	// kube-apiserver's and the controllers' default certificate
	// directories, besides kubelet's own hard-coded paths.
	guardHost(t, append(slices.Clone(hardCodedDirs), "/var/run/kubernetes", "/etc/kubernetes"))

	ctx := context.Background()
	began := time.Now()
	dir, err := os.MkdirTemp("/tmp", "sbxk8c-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	// After containerd stopped (cleanups run last-in first-out).
	t.Cleanup(func() { removeKubeletCgroups(t, dir) })
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
	// After kubelet, before containerd (cleanups run last-in first-out).
	t.Cleanup(func() { removeSandboxes(t, cri, ctrd.CNIConfDir) })
	built := importImage(t, ctrd, dir)

	cp := startControlPlane(t, bins, filepath.Join(dir, "cp"), ctrd.NetNSPath)
	api := cp.api
	startKubelet(t, kubeletOptions{
		binary: kubeletBin, dir: filepath.Join(dir, "kubelet"), criEndpoint: ctrd.Endpoint,
		netnsPath: ctrd.NetNSPath, nodeName: nodeName, kubeconfig: cp.Kubeconfig,
	})
	// The workloads go before kubelet and the control plane stop
	// (cleanups run last-in first-out), so ipamd sees every DEL.
	t.Cleanup(func() { removeWorkloads(t, api, cri) })
	testsupport.WaitFor(t, 2*time.Minute, "the node registers", func(ctx context.Context) error {
		var n corev1.Node
		return api.get(ctx, "/api/v1/nodes/"+nodeName, &n)
	})
	t.Logf("node %s registered at %s", nodeName, time.Since(began).Round(time.Millisecond))

	// kubectl apply -k deploy/kubernetes/overlays/static-one-node, with
	// the host paths pointed at the test's directories.
	paths := nodePaths{
		run: filepath.Join(dir, "run"), state: filepath.Join(dir, "state"),
		cniBin: ctrd.CNIBinDir, cniConf: ctrd.CNIConfDir, runtimeSocket: ctrd.Address,
	}
	r, err := deploy.Render(oneNodeOverlay)
	if err != nil {
		t.Fatal(err)
	}
	ds := r.DaemonSet
	confList := nodePodSpec(t, &ds.Spec.Template.Spec, paths)
	ns := ds.Namespace
	for _, c := range manifestObjects(r) {
		if err := api.create(ctx, c.path, c.obj); err != nil {
			t.Fatal(err)
		}
	}
	dsPath := "/apis/apps/v1/namespaces/" + ns + "/daemonsets/" + ds.Name
	ipamdPod := waitDaemonSet(t, api, dsPath, "")
	t.Logf("DaemonSet ready (pod %s) at %s", ipamdPod.Name, time.Since(began).Round(time.Millisecond))
	followIPAMD(t, cri, dir)
	if _, err := os.Stat(confList); err != nil {
		t.Fatalf("ipamd is ready but wrote no conflist: %v", err)
	}
	installed, err := os.ReadFile(filepath.Join(ctrd.CNIBinDir, "sandboxipam"))
	if err != nil {
		t.Fatalf("init container did not install the plugin: %v", err)
	}
	if !bytes.Equal(installed, built) {
		t.Fatalf("installed plugin (%d bytes) differs from the image's (%d bytes)", len(installed), len(built))
	}

	// Ten pods of a Deployment, each addressed by ipamd under the
	// sandbox ID the runtime gave it.
	if err := api.create(ctx, "/apis/apps/v1/namespaces/default/deployments", webDeployment(webReplicas)); err != nil {
		t.Fatal(err)
	}
	pods := waitWebPods(t, api, webReplicas)
	first := waitConsistent(t, api, cri, pods)
	t.Logf("%d pods running and matching ipamd at %s:\n  %s", webReplicas, time.Since(began).Round(time.Millisecond), strings.Join(first, "\n  "))

	// Half the pods are deleted; the ReplicaSet replaces them and ipamd
	// holds exactly the ten live ones.
	names := make([]string, 0, len(pods))
	for name := range pods {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names[:webReplicas/2] {
		if err := api.delete(ctx, "/api/v1/namespaces/default/pods/"+name); err != nil {
			t.Fatal(err)
		}
	}
	pods = waitWebPods(t, api, webReplicas)
	for _, name := range names[:webReplicas/2] {
		if _, ok := pods[name]; ok {
			t.Fatalf("deleted pod %s still runs", name)
		}
	}
	afterDelete := waitConsistent(t, api, cri, pods)
	for _, line := range first {
		f := strings.Fields(line) // sandbox ID, namespace/name, IP
		if slices.Contains(names[:webReplicas/2], strings.TrimPrefix(f[1], "default/")) {
			for _, now := range afterDelete {
				if strings.HasPrefix(now, f[0]+" ") {
					t.Fatalf("ipamd still holds deleted pod %s's sandbox: %s", f[1], now)
				}
			}
		}
	}

	// A rolling update of the DaemonSet: a new ipamd pod replaces the
	// old one; nothing is lost and nothing doubled.
	oldID, _, err := cri.runningContainer(ctx, "ipamd")
	if err != nil {
		t.Fatal(err)
	}
	patch := map[string]any{"spec": map[string]any{"template": map[string]any{"metadata": map[string]any{
		"annotations": map[string]string{"sandboxipam.e2e/restartedAt": time.Now().UTC().Format(time.RFC3339Nano)},
	}}}}
	if err := api.mergePatch(ctx, dsPath, patch); err != nil {
		t.Fatal(err)
	}
	newPod := waitDaemonSet(t, api, dsPath, ipamdPod.UID)
	t.Logf("DaemonSet rolled: pod %s replaced %s", newPod.Name, ipamdPod.Name)
	testsupport.WaitFor(t, 2*time.Minute, "the new ipamd container runs and is ready", func(ctx context.Context) error {
		id, _, err := cri.runningContainer(ctx, "ipamd")
		if err != nil {
			return err
		}
		if id == oldID {
			return errors.New("the old ipamd container still runs")
		}
		return readyz(ctx, ctrd.NetNSPath)
	})
	followIPAMD(t, cri, dir)
	if _, err := os.Stat(confList); err != nil {
		t.Fatalf("the new ipamd is ready but wrote no conflist: %v", err)
	}
	afterRoll := waitConsistent(t, api, cri, waitWebPods(t, api, webReplicas))
	if !slices.Equal(afterRoll, afterDelete) {
		t.Fatalf("the roll changed ipamd's assignments:\nbefore\n  %s\nafter\n  %s",
			strings.Join(afterDelete, "\n  "), strings.Join(afterRoll, "\n  "))
	}

	// Scaled to zero: every address is free again.
	if err := api.mergePatch(ctx, "/apis/apps/v1/namespaces/default/deployments/"+webName,
		map[string]any{"spec": map[string]any{"replicas": 0}}); err != nil {
		t.Fatal(err)
	}
	waitWebPods(t, api, 0)
	waitConsistent(t, api, cri, nil)
	testsupport.WaitFor(t, time.Minute, "every address is free", func(ctx context.Context) error {
		pool, err := ipamctlPool(ctx, cri)
		if err != nil {
			return err
		}
		if pool.Assigned != 0 || pool.Unproven != 0 || pool.Free+pool.Cooling != pool.Total {
			return fmt.Errorf("pool %+v", pool)
		}
		return nil
	})
	t.Logf("scaled to zero, every address free, at %s", time.Since(began).Round(time.Millisecond))

	// Uninstall: the preStop hook takes the conflist away.
	removeWorkloads(t, api, cri)
	if _, err := os.Stat(confList); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the conflist outlived the DaemonSet (%s): %v", conflistRace, err)
	}
}

// webDeployment is a Deployment of n pause pods on the pod network.
func webDeployment(n int32) *appsv1.Deployment {
	grace := int64(1)
	noToken := false
	labels := map[string]string{"app": webName}
	return &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Name: webName, Namespace: "default"},
		Spec: appsv1.DeploymentSpec{
			Replicas: &n,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					TerminationGracePeriodSeconds: &grace,
					AutomountServiceAccountToken:  &noToken,
					Containers: []corev1.Container{{
						Name: "app", Image: fixture.DefaultPauseImage, ImagePullPolicy: corev1.PullNever,
					}},
				},
			},
		},
	}
}

// waitDaemonSet waits until the DaemonSet has rolled out to the node:
// one pod, updated, ready and available, not the one whose UID is oldUID.
func waitDaemonSet(t *testing.T, api *apiClient, dsPath string, oldUID k8stypes.UID) corev1.Pod {
	t.Helper()
	var pod corev1.Pod
	testsupport.WaitFor(t, 5*time.Minute, "the DaemonSet is ready", func(ctx context.Context) error {
		var ds appsv1.DaemonSet
		if err := api.get(ctx, dsPath, &ds); err != nil {
			return err
		}
		st := ds.Status
		if st.ObservedGeneration < ds.Generation || st.DesiredNumberScheduled != 1 || st.UpdatedNumberScheduled != 1 ||
			st.NumberReady != 1 || st.NumberAvailable != 1 {
			return fmt.Errorf("status %+v", st)
		}
		var list corev1.PodList
		sel := url.QueryEscape("app.kubernetes.io/name=sandboxipam")
		if err := api.get(ctx, "/api/v1/namespaces/"+ds.Namespace+"/pods?labelSelector="+sel, &list); err != nil {
			return err
		}
		if len(list.Items) != 1 {
			return fmt.Errorf("%d ipamd pods", len(list.Items))
		}
		pod = list.Items[0]
		if pod.UID == oldUID || pod.DeletionTimestamp != nil || !podReady(&pod) {
			return fmt.Errorf("pod %s (%s) not the new ready one", pod.Name, pod.UID)
		}
		return nil
	})
	return pod
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// apiPod is a pod of the Deployment as the API server reports it.
type apiPod struct {
	Name, IP string
}

// waitWebPods waits until the Deployment has exactly n pods, every one
// running, ready and with an address, none terminating.
func waitWebPods(t *testing.T, api *apiClient, n int) map[string]apiPod {
	t.Helper()
	got := map[string]apiPod{}
	testsupport.WaitFor(t, 5*time.Minute, fmt.Sprintf("%d %s pods run", n, webName), func(ctx context.Context) error {
		var list corev1.PodList
		sel := url.QueryEscape("app=" + webName)
		if err := api.get(ctx, "/api/v1/namespaces/default/pods?labelSelector="+sel, &list); err != nil {
			return err
		}
		clear(got)
		var notYet []string
		for _, p := range list.Items {
			if p.DeletionTimestamp != nil || p.Status.Phase != corev1.PodRunning || !podReady(&p) || p.Status.PodIP == "" {
				notYet = append(notYet, p.Name+" "+string(p.Status.Phase))
				continue
			}
			got[p.Name] = apiPod{Name: p.Name, IP: p.Status.PodIP}
		}
		if len(notYet) > 0 || len(got) != n {
			return fmt.Errorf("%d running, want %d; not yet: %v", len(got), n, notYet)
		}
		return nil
	})
	return got
}

// waitConsistent waits until ipamd's assignments (ipamctl pods, run in the
// ipamd container), the runtime's ready sandboxes (crictl) and the API
// server's pods agree exactly: the same pods, the same addresses, each
// under the sandbox ID the runtime gave it, no address twice. It returns
// the assignments as sorted "sandboxID namespace/name IP" lines.
func waitConsistent(t *testing.T, api *apiClient, cri crictl, pods map[string]apiPod) []string {
	t.Helper()
	var lines []string
	testsupport.WaitFor(t, 2*time.Minute, "ipamd, the runtime and the API server agree", func(ctx context.Context) error {
		sandboxes, err := cri.pods(ctx)
		if err != nil {
			return err
		}
		var want []string
		byName := map[string]criPod{}
		for _, s := range sandboxes {
			if s.State == "SANDBOX_READY" && s.Namespace == "default" {
				if _, dup := byName[s.Name]; dup {
					return fmt.Errorf("two ready sandboxes for %s", s.Name)
				}
				byName[s.Name] = s
			}
		}
		if len(byName) != len(pods) {
			return fmt.Errorf("%d ready sandboxes in default, %d pods in the API", len(byName), len(pods))
		}
		for name, p := range pods {
			s, ok := byName[name]
			if !ok {
				return fmt.Errorf("no ready sandbox for pod %s", name)
			}
			if s.IP != p.IP {
				return fmt.Errorf("pod %s: API says %s, runtime %s", name, p.IP, s.IP)
			}
			want = append(want, s.ID+" default/"+name+" "+p.IP)
		}
		ipamdID, _, err := cri.runningContainer(ctx, "ipamd")
		if err != nil {
			return err
		}
		held, err := ipamctlPods(ctx, cri, ipamdID)
		if err != nil {
			return err
		}
		var got []string
		ips := map[string]string{}
		for _, h := range held {
			if other, dup := ips[h.IP]; dup {
				t.Fatalf("ipamd gave %s to both %s and %s", h.IP, other, h.SandboxID)
			}
			ips[h.IP] = h.SandboxID
			got = append(got, h.SandboxID+" "+h.Namespace+"/"+h.Name+" "+h.IP)
		}
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			return fmt.Errorf("ipamctl pods:\n  %s\nAPI server and runtime:\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
		}
		lines = got
		return nil
	})
	return lines
}

// ipamctlPool runs "ipamctl -o json pool" in the ipamd container.
func ipamctlPool(ctx context.Context, cri crictl) (introspect.Pool, error) {
	var pool introspect.Pool
	id, _, err := cri.runningContainer(ctx, "ipamd")
	if err != nil {
		return pool, err
	}
	out, err := cri.cmd(ctx, "exec", "--sync", id, "/usr/bin/ipamctl", "-o", "json", "pool")
	if err != nil {
		return pool, err
	}
	if err := json.Unmarshal([]byte(out), &pool); err != nil {
		return pool, fmt.Errorf("ipamctl pool: %w: %s", err, out)
	}
	return pool, nil
}

// removeWorkloads deletes the Deployment, then the DaemonSet (its preStop
// hook removes the conflist), and waits until no pod sandbox is ready, so
// that ipamd has seen every DEL before it goes. It runs again at cleanup,
// where what is already gone is no error.
func removeWorkloads(t *testing.T, api *apiClient, cri crictl) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	for _, path := range []string{
		"/apis/apps/v1/namespaces/default/deployments/" + webName,
		"/apis/apps/v1/namespaces/kube-system/daemonsets/sandboxipam",
	} {
		if err := api.delete(ctx, path); err != nil && !errors.Is(err, errNotFound) {
			t.Logf("remove workloads: %v", err)
		}
		if strings.Contains(path, "deployments") {
			// ipamd must outlive the app pods to see their DELs.
			waitNoReadySandboxes(ctx, t, cri, "default")
		}
	}
	waitNoReadySandboxes(ctx, t, cri, "")
}

// waitNoReadySandboxes waits until the runtime lists no ready sandbox in
// namespace ("" for any).
func waitNoReadySandboxes(ctx context.Context, t *testing.T, cri crictl, namespace string) {
	t.Helper()
	for {
		pods, err := cri.pods(ctx)
		ready := 0
		for _, p := range pods {
			if p.State == "SANDBOX_READY" && (namespace == "" || p.Namespace == namespace) {
				ready++
			}
		}
		if err == nil && ready == 0 {
			return
		}
		select {
		case <-ctx.Done():
			t.Logf("remove workloads: %d sandboxes still ready (%v)", ready, err)
			return
		case <-time.After(500 * time.Millisecond): // CRI has no watch for pods going away: poll the listing
		}
	}
}

// followIPAMD keeps the running ipamd container's log (followLogs).
func followIPAMD(t *testing.T, cri crictl, dir string) {
	t.Helper()
	id, _, err := cri.runningContainer(context.Background(), "ipamd")
	if err != nil {
		t.Fatal(err)
	}
	followLogs(t, cri, id, dir)
}
