package kubernetes

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sandboxipam/sandboxipam/conformance/fixture"
	"github.com/sandboxipam/sandboxipam/internal/kubeenv"
	"github.com/sandboxipam/sandboxipam/internal/testenv"
	"github.com/sandboxipam/sandboxipam/internal/testsupport"
)

const nodeName = "sbxipam-node"

// cacheDir is where tools/kubernetes/build.sh caches the components.
func cacheDir() string { return kubeenv.CacheDir() }

// cachePaths are the kubelet and crictl tools/kubernetes/build.sh caches.
func cachePaths() (kubelet, crictl string) {
	return filepath.Join(cacheDir(), "kubelet"), filepath.Join(cacheDir(), "crictl")
}

// requireE2E skips unless the suite was asked for, then requires a node
// that can run containerd (skip, or fail under CI=true), and returns the
// kubelet and crictl binaries.
func requireE2E(t *testing.T) (kubeletBin, crictlBin string) {
	t.Helper()
	if os.Getenv("SANDBOXIPAM_E2E_KUBERNETES") == "" {
		t.Skip("set SANDBOXIPAM_E2E_KUBERNETES=1 (make e2e-kubernetes) to run kubelet")
	}
	testenv.Require(t)
	kubeletBin, crictlBin = cachePaths()
	if err := kubeenv.Built(kubeletBin, crictlBin); err != nil {
		t.Fatal(err)
	}
	return kubeletBin, crictlBin
}

// TestStandaloneKubelet runs ipamd as a static pod from the DaemonSet's
// pod template and three app pods under a real kubelet on containerd,
// kills ipamd, removes pods with and without ipamd, and checks nothing
// leaks.
func TestStandaloneKubelet(t *testing.T) { standaloneKubelet(t, startContainerdRuntime) }

// TestStandaloneKubeletCRIO is TestStandaloneKubelet on CRI-O, with ipamd
// from the crio overlay's pod template (its crio adapter, CRI-O's socket
// mounted), asserting the same.
func TestStandaloneKubeletCRIO(t *testing.T) { standaloneKubelet(t, startCRIORuntime) }

func standaloneKubelet(t *testing.T, start func(t *testing.T, dir string) nodeRuntime) {
	kubeletBin, crictlBin := requireE2E(t)
	guardHost(t, hardCodedDirs)

	ctx := context.Background()
	dir, err := os.MkdirTemp("/tmp", "sbxk8s-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	// After the runtime stopped (cleanups run last-in first-out).
	t.Cleanup(func() { removeKubeletCgroups(t, dir) })

	// The runtime, private, whose CNI config directory ipamd alone fills.
	rt := start(t, dir)
	emptyConfDir(t, rt.cniConfDir)
	cri := crictl{binary: crictlBin, endpoint: rt.endpoint}
	// After kubelet, before the runtime (cleanups run last-in first-out).
	t.Cleanup(func() { removeSandboxesOf(t, rt, cri) })

	// The image, built and loaded as an operator would.
	built := loadImage(t, rt, dir)

	paths := nodePaths{
		config: filepath.Join(dir, "config"), run: filepath.Join(dir, "run"), state: filepath.Join(dir, "state"),
		cniBin: rt.cniBinDir, cniConf: rt.cniConfDir, runtimeSocket: rt.socket,
	}
	ipamdPod, confList := ipamdStaticPodFrom(t, rt.render(t), paths)
	manifests := filepath.Join(dir, "manifests")
	if err := os.Mkdir(manifests, 0o755); err != nil {
		t.Fatal(err)
	}
	ipamdManifest := writeManifest(t, manifests, ipamdPod)
	k := startKubelet(t, kubeletOptions{
		binary: kubeletBin, dir: filepath.Join(dir, "kubelet"), criEndpoint: rt.endpoint,
		netnsPath: rt.netns, staticPodDir: manifests, nodeName: nodeName,
	})
	// Pods go before kubelet stops (cleanups run last-in first-out).
	t.Cleanup(func() { removeAllPods(cri, manifests) })

	ipamdID := waitIPAMDReady(t, cri, rt.netns, paths, confList)
	installed, err := os.ReadFile(filepath.Join(rt.cniBinDir, "sandboxipam"))
	if err != nil {
		t.Fatalf("init container did not install the plugin: %v", err)
	}
	if !bytes.Equal(installed, built) {
		t.Fatalf("installed plugin (%d bytes) differs from the image's (%d bytes)", len(installed), len(built))
	}
	// Ready means a listing proved the pool: the adapter has answered.
	checkAdapterRuntime(t, cri, ipamdID, rt)

	// Three app pods, each addressed by ipamd under its sandbox ID; where
	// the runtime hands hostPorts to CNI, app-1 publishes one, which the
	// conflist's portmap maps.
	apps := map[string]string{}
	for _, name := range []string{"app-1", "app-2", "app-3"} {
		pod := appPod(name, fixture.DefaultPauseImage)
		if name == "app-1" && rt.cniMapsHostPorts {
			withHostPort(pod)
		}
		apps[name] = writeManifest(t, manifests, pod)
	}
	want := waitApps(t, cri, []string{"app-1", "app-2", "app-3"})
	checkAssignments(t, cri, ipamdID, want)
	if rt.cniMapsHostPorts {
		checkHostPort(t, rt.netns, want["app-1"].PID)
	}

	// SIGKILL ipamd: kubelet restarts it; nothing is lost.
	_, pid, err := cri.runningContainer(ctx, "ipamd")
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatalf("kill ipamd (pid %d): %v", pid, err)
	}
	var restarted string
	testsupport.WaitFor(t, 2*time.Minute, "kubelet restarts ipamd", func(ctx context.Context) error {
		id, _, err := cri.runningContainer(ctx, "ipamd")
		if err != nil {
			return err
		}
		if id == ipamdID {
			return errors.New("the killed container still runs")
		}
		restarted = id
		return readyz(ctx, rt.netns)
	})
	ipamdID = restarted
	followLogs(t, cri, ipamdID, dir)
	checkAssignments(t, cri, ipamdID, want)

	// A pod whose manifest goes is released by its DEL.
	removeFile(t, apps["app-1"])
	waitReleased(t, cri, ipamdID, want["app-1"], "app-1's DEL")
	delete(want, "app-1")

	// A pod removed while ipamd is down is reclaimed by the reconciler.
	removeFile(t, ipamdManifest)
	testsupport.WaitFor(t, 2*time.Minute, "ipamd stops and its preStop removes the conflist", func(ctx context.Context) error {
		if _, _, err := cri.runningContainer(ctx, "ipamd"); err == nil {
			return errors.New("ipamd still runs")
		}
		if _, err := os.Stat(confList); err == nil {
			return fmt.Errorf("%s still there (%s)", confList, conflistRace)
		}
		return nil
	})
	loseDEL(t, cri, rt, confList, apps["app-2"], want["app-2"])
	writeManifest(t, manifests, ipamdPod)
	ipamdID = waitIPAMDReady(t, cri, rt.netns, paths, confList)
	waitReleased(t, cri, ipamdID, want["app-2"], "the reconciler")
	delete(want, "app-2")
	checkAssignments(t, cri, ipamdID, want)

	// The last pod goes: nothing is left assigned.
	removeFile(t, apps["app-3"])
	waitReleased(t, cri, ipamdID, want["app-3"], "app-3's DEL")
	if got, err := ipamctlPods(ctx, cri, ipamdID); err != nil || len(got) != 0 {
		t.Fatalf("ipamctl pods at the end: %+v, %v", got, err)
	}
	removeFile(t, ipamdManifest)
	testsupport.WaitFor(t, 2*time.Minute, "every pod is gone", func(ctx context.Context) error {
		pods, err := cri.pods(ctx)
		if err != nil {
			return err
		}
		var ready []string
		for _, p := range pods {
			if p.State == "SANDBOX_READY" {
				ready = append(ready, p.Name)
			}
		}
		if len(ready) > 0 {
			return fmt.Errorf("still ready: %v", ready)
		}
		if _, err := os.Stat(confList); err == nil {
			return fmt.Errorf("the conflist outlived ipamd (%s)", conflistRace)
		}
		return nil
	})
	k.stop()
}

// guardHost registers a check, run after everything else the test
// started is gone, that the host's sysctls kubelet would change are as
// they were and that each of dirs exists exactly if it did before.
func guardHost(t *testing.T, dirs []string) {
	t.Helper()
	sysctlsBefore := readSysctls(t)
	var existed []bool
	for _, d := range dirs {
		_, err := os.Stat(d)
		existed = append(existed, err == nil)
	}
	t.Cleanup(func() {
		// Registered first, so it runs last: after kubelet and
		// containerd are gone.
		if after := readSysctls(t); fmt.Sprint(after) != fmt.Sprint(sysctlsBefore) {
			t.Errorf("host sysctls changed: before %v, after %v", sysctlsBefore, after)
		}
		for i, d := range dirs {
			if _, err := os.Stat(d); (err == nil) != existed[i] {
				t.Errorf("%s: existed before %v, now %v", d, existed[i], err == nil)
			}
		}
	})
}

// importImage builds the project's image as make image does and imports
// it into containerd as an operator would; it returns the CNI plugin
// binary the image holds.
func importImage(t *testing.T, ctrd *testenv.Containerd, dir string) []byte {
	t.Helper()
	began := time.Now()
	archives, plugin := buildImage(t, dir)
	run(t, "ctr", "--address", ctrd.Address, "--namespace", ctrd.Namespace, "images", "import", archives.OCI)
	t.Logf("image %s built and imported in %s", archives.Digest, time.Since(began).Round(time.Millisecond))
	return plugin
}

// conflistRace names the known way the conflist outlives ipamd, so that a
// failure says where to look: ipamd writes its conflist again when it finds
// it gone after a reconcile pass, and nothing stops that between the
// preStop hook's removal and ipamd's handling of SIGTERM. ipamd's log then
// shows "writing it again" just before "shutting down".
const conflistRace = "did ipamd write it again after the preStop hook removed it? see its log"

// emptyConfDir removes the default conflist testenv wrote: on this node
// the network exists only while ipamd says so.
func emptyConfDir(t *testing.T, dir string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		removeFile(t, filepath.Join(dir, e.Name()))
	}
}

func removeFile(t *testing.T, path string) {
	t.Helper()
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
}

func readyz(ctx context.Context, nsPath string) error {
	code, body, err := httpInNetNS(ctx, nsPath, "http://127.0.0.1:61679/readyz")
	if err != nil {
		return err
	}
	if code != 200 {
		return fmt.Errorf("/readyz %d: %s", code, strings.TrimSpace(body))
	}
	return nil
}

// waitIPAMDReady waits until the ipamd container runs, and checks that
// the conflist appears only once ipamd can answer ADD: the first time it
// is seen, the CNI socket must already accept, and /readyz must agree.
func waitIPAMDReady(t *testing.T, cri crictl, netns string, paths nodePaths, confList string) string {
	t.Helper()
	socket := filepath.Join(paths.run, "ipamd.sock")
	testsupport.WaitFor(t, 3*time.Minute, "ipamd writes the conflist", func(ctx context.Context) error {
		if _, err := os.Stat(confList); err != nil {
			return err
		}
		c, err := net.DialTimeout("unix", socket, time.Second)
		if err != nil {
			t.Fatalf("the conflist appeared while ipamd's CNI socket refuses: %v", err)
		}
		c.Close()
		return nil
	})
	var id string
	testsupport.WaitFor(t, 30*time.Second, "ipamd is ready", func(ctx context.Context) error {
		var err error
		if id, _, err = cri.runningContainer(ctx, "ipamd"); err != nil {
			return err
		}
		return readyz(ctx, netns)
	})
	followLogs(t, cri, id, filepath.Dir(paths.run))
	return id
}

// waitApps waits until each named static pod has one ready sandbox with
// an IP, and returns them by name.
func waitApps(t *testing.T, cri crictl, names []string) map[string]criPod {
	t.Helper()
	got := map[string]criPod{}
	testsupport.WaitFor(t, 3*time.Minute, "app pods run", func(ctx context.Context) error {
		pods, err := cri.pods(ctx)
		if err != nil {
			return err
		}
		clear(got)
		for _, p := range pods {
			for _, n := range names {
				if p.Name == n+"-"+nodeName && p.State == "SANDBOX_READY" && p.IP != "" {
					got[n] = p
				}
			}
		}
		if len(got) != len(names) {
			return fmt.Errorf("ready with an IP: %v of %v", got, names)
		}
		return nil
	})
	return got
}

// checkAssignments compares ipamctl pods, run inside the ipamd container,
// with crictl: the same sandbox IDs, names and addresses, nothing more.
func checkAssignments(t *testing.T, cri crictl, ipamdID string, want map[string]criPod) {
	t.Helper()
	got, err := ipamctlPods(context.Background(), cri, ipamdID)
	if err != nil {
		t.Fatal(err)
	}
	var gotS, wantS []string
	for _, p := range got {
		gotS = append(gotS, p.SandboxID+" "+p.Namespace+"/"+p.Name+" "+p.IP)
	}
	for _, p := range want {
		wantS = append(wantS, p.ID+" "+p.Namespace+"/"+p.Name+" "+p.IP)
	}
	slices.Sort(gotS)
	slices.Sort(wantS)
	if !slices.Equal(gotS, wantS) {
		t.Fatalf("ipamctl pods:\n  %s\ncrictl pods:\n  %s", strings.Join(gotS, "\n  "), strings.Join(wantS, "\n  "))
	}
}

// waitReleased waits until ipamd no longer holds the pod's sandbox ID.
func waitReleased(t *testing.T, cri crictl, ipamdID string, pod criPod, by string) {
	t.Helper()
	testsupport.WaitFor(t, 2*time.Minute, pod.Name+" released by "+by, func(ctx context.Context) error {
		got, err := ipamctlPods(ctx, cri, ipamdID)
		if err != nil {
			return err
		}
		for _, p := range got {
			if p.SandboxID == pod.ID {
				return fmt.Errorf("%s still holds %s", p.SandboxID, p.IP)
			}
		}
		return nil
	})
}

// loseDEL removes a pod while ipamd is down so that its DEL never reaches
// ipamd: neither containerd nor CRI-O removes a sandbox whose network
// teardown fails, so a loopback-only conflist of the same network stands
// in while kubelet stops the pod (CRI-O tears down with the config libcni
// cached at ADD: that cache goes first), and the stopped sandbox is
// force-removed, as an operator would after the runtime's retries.
func loseDEL(t *testing.T, cri crictl, rt nodeRuntime, confList, manifest string, pod criPod) {
	t.Helper()
	noop := `{"cniVersion": "1.0.0", "name": "sandboxipam", "plugins": [{"type": "loopback"}]}`
	if err := os.WriteFile(confList, []byte(noop), 0o644); err != nil {
		t.Fatal(err)
	}
	if rt.cachesCNIConfig {
		dropCNICache(t, pod.ID)
	}
	removeFile(t, manifest)
	testsupport.WaitFor(t, 2*time.Minute, pod.Name+" is removed without ipamd", func(ctx context.Context) error {
		pods, err := cri.pods(ctx)
		if err != nil {
			return err
		}
		for _, p := range pods {
			if p.ID != pod.ID {
				continue
			}
			if _, err := cri.cmd(ctx, "stopp", p.ID); err != nil {
				return err
			}
			if _, err := cri.cmd(ctx, "rmp", p.ID); err != nil {
				return err
			}
			return errors.New("removed just now")
		}
		return nil
	})
	removeFile(t, confList)
}

// removeAllPods removes every manifest and waits for kubelet to stop the
// pods, so that ipamd releases what they held before it goes.
func removeAllPods(cri crictl, manifests string) {
	entries, _ := os.ReadDir(manifests)
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), "sandboxipam") {
			os.Remove(filepath.Join(manifests, e.Name()))
		}
	}
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		pods, err := cri.pods(context.Background())
		if err == nil && len(pods) <= 1 {
			break
		}
		time.Sleep(500 * time.Millisecond) // CRI has no watch for pods going away: poll the listing
	}
	os.Remove(filepath.Join(manifests, "sandboxipam.json"))
}
