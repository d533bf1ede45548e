package kubernetes

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	deploy "github.com/sandboxipam/sandboxipam/deploy/kubernetes"
	"github.com/sandboxipam/sandboxipam/internal/image"
	"github.com/sandboxipam/sandboxipam/internal/scenario"
	"github.com/sandboxipam/sandboxipam/internal/testenv"
	"github.com/sandboxipam/sandboxipam/internal/testsupport"
)

// nodeRuntime is the container runtime under a standalone kubelet: where
// it listens, its CNI directories and network namespace (kubelet's and
// every hostNetwork pod's too), the overlay whose DaemonSet pod template
// ipamd runs from, and how the project's image gets into its store.
type nodeRuntime struct {
	name string
	// runtimeName is what ipamd's adapter reports the runtime as.
	runtimeName string
	endpoint    string // the CRI endpoint, for kubelet and crictl
	socket      string // the socket's path on the host, mounted into ipamd
	// cniConfDir and cniBinDir are the runtime's CNI directories: ipamd
	// writes its conflist in the one, installs the plugin in the other.
	cniConfDir, cniBinDir string
	netns                 string
	// render gives the DaemonSet and ConfigMap ipamd's static pod is made
	// from: the runtime's overlay with a one-node pool.
	render func(t *testing.T) deploy.Rendered
	// load imports the image archives as an operator would.
	load func(t *testing.T, archives image.Archives)
	// cachesCNIConfig: the runtime tears a pod down with the network
	// config libcni cached with its result at ADD (CRI-O's ocicni), not
	// the current one, so a stand-in conflist alone does not keep a DEL
	// from ipamd.
	cachesCNIConfig bool
	// cniMapsHostPorts: the runtime passes a pod's hostPorts to CNI (the
	// portMappings capability), so the conflist's portmap maps them.
	// CRI-O never does: it maps them itself, and 1.34.0 panics on the
	// first hostPort pod where the nft binary is missing (a nil nftables
	// mapper taken for a present one), as on this machine.
	cniMapsHostPorts bool
}

// startContainerdRuntime starts a private containerd under dir, stopped
// when the test ends.
func startContainerdRuntime(t *testing.T, dir string) nodeRuntime {
	t.Helper()
	ctrd, err := testenv.StartContainerd(context.Background(), testenv.ContainerdOptions{Dir: filepath.Join(dir, "ctd")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := ctrd.Stop(context.Background()); err != nil {
			t.Errorf("stop containerd: %v", err)
		}
	})
	return nodeRuntime{
		name: "containerd", runtimeName: "containerd", endpoint: ctrd.Endpoint, socket: ctrd.Address, cniMapsHostPorts: true,
		cniConfDir: ctrd.CNIConfDir, cniBinDir: ctrd.CNIBinDir, netns: ctrd.NetNSPath,
		render: func(t *testing.T) deploy.Rendered { return renderOverlay(t, oneNodeOverlay) },
		load: func(t *testing.T, archives image.Archives) {
			run(t, "ctr", "--address", ctrd.Address, "--namespace", ctrd.Namespace, "images", "import", archives.OCI)
		},
	}
}

// startCRIORuntime starts a private CRI-O (make test-tools builds it)
// under dir, stopped when the test ends. Without its binaries the test
// skips, or fails under CI=true.
func startCRIORuntime(t *testing.T, dir string) nodeRuntime {
	t.Helper()
	crio, err := testenv.StartCRIO(context.Background(), testenv.CRIOOptions{Dir: filepath.Join(dir, "crio")})
	if errors.Is(err, testenv.ErrUnavailable) {
		testsupport.SkipOrFail(t, "CRI-O: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := crio.Stop(context.Background()); err != nil {
			t.Errorf("stop cri-o: %v", err)
		}
	})
	return nodeRuntime{
		name: "crio", runtimeName: "cri-o", endpoint: crio.Endpoint, socket: crio.Address,
		cniConfDir: crio.CNIConfDir, cniBinDir: crio.CNIBinDir, netns: crio.NetNSPath,
		render: func(t *testing.T) deploy.Rendered { return renderOneNode(t, "crio") },
		load: func(t *testing.T, archives image.Archives) {
			if err := crio.LoadImage(context.Background(), archives.Docker, image.DefaultRef); err != nil {
				t.Fatal(err)
			}
		},
		cachesCNIConfig: true,
	}
}

func renderOverlay(t *testing.T, overlay string) deploy.Rendered {
	t.Helper()
	r, err := deploy.Render(overlay)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// renderOneNode renders a runtime's overlay on a node of its own, as the
// docs/cluster.md has an operator combine the runtime's overlay with the
// static-one-node patch: the runtime overlay's DaemonSet, with the
// IPAMD_IPSOURCE_* variables static-one-node sets on ipamd.
func renderOneNode(t *testing.T, runtimeOverlay string) deploy.Rendered {
	t.Helper()
	r := renderOverlay(t, runtimeOverlay)
	var pool []corev1.EnvVar
	for _, e := range renderOverlay(t, oneNodeOverlay).DaemonSet.Spec.Template.Spec.Containers[0].Env {
		if strings.HasPrefix(e.Name, "IPAMD_IPSOURCE_") {
			pool = append(pool, e)
		}
	}
	if len(pool) == 0 {
		t.Fatalf("overlay %s sets no IPAMD_IPSOURCE_* variable", oneNodeOverlay)
	}
	c := &r.DaemonSet.Spec.Template.Spec.Containers[0]
	for _, e := range c.Env {
		if strings.HasPrefix(e.Name, "IPAMD_IPSOURCE_") {
			t.Fatalf("overlay %s sets %s itself", runtimeOverlay, e.Name)
		}
	}
	c.Env = append(c.Env, pool...)
	return r
}

// buildImage builds the project's image as make image does; it returns
// the archives and the CNI plugin binary the image holds.
func buildImage(t *testing.T, dir string) (image.Archives, []byte) {
	t.Helper()
	root, err := scenario.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	archives, err := image.BuildProjectArchives(context.Background(), root, filepath.Join(dir, "bin"), image.DefaultCABundle, image.DefaultRef, dir)
	if err != nil {
		t.Fatal(err)
	}
	plugin, err := os.ReadFile(filepath.Join(dir, "bin", filepath.FromSlash(image.CNIPluginPath)))
	if err != nil {
		t.Fatal(err)
	}
	return archives, plugin
}

// loadImage builds the project's image and loads it into rt; it returns
// the CNI plugin binary the image holds.
func loadImage(t *testing.T, rt nodeRuntime, dir string) []byte {
	t.Helper()
	began := time.Now()
	archives, plugin := buildImage(t, dir)
	rt.load(t, archives)
	t.Logf("image %s built and loaded into %s in %s", archives.Digest, rt.name, time.Since(began).Round(time.Millisecond))
	return plugin
}

// cniResultsDir is where libcni caches each attachment's result and
// config, whatever the runtime's config says.
const cniResultsDir = "/var/lib/cni/results"

// dropCNICache removes what libcni cached for the sandbox's attachments to
// ipamd's network, so that a runtime that tears down with the cached
// config (nodeRuntime.cachesCNIConfig) uses the current one.
func dropCNICache(t *testing.T, sandboxID string) {
	t.Helper()
	cached, err := filepath.Glob(filepath.Join(cniResultsDir, "sandboxipam-"+sandboxID+"-*"))
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range cached {
		if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Error(err)
		}
	}
}

// removeSandboxesOf is removeSandboxes on rt, whose cached network configs
// go first when it tears down with them.
func removeSandboxesOf(t *testing.T, rt nodeRuntime, cri crictl) {
	t.Helper()
	if rt.cachesCNIConfig {
		pods, err := cri.pods(context.Background())
		if err != nil {
			t.Errorf("list sandboxes before removing them: %v", err)
		}
		for _, p := range pods {
			dropCNICache(t, p.ID)
		}
	}
	removeSandboxes(t, cri, rt.cniConfDir)
}

// checkAdapterRuntime checks, with ipamctl inside the ipamd container, that
// ipamd's adapter reads rt: the overlay's adapter and socket are the ones
// in use.
func checkAdapterRuntime(t *testing.T, cri crictl, ipamdID string, rt nodeRuntime) {
	t.Helper()
	out, err := cri.cmd(context.Background(), "exec", "--sync", ipamdID, "/usr/bin/ipamctl", "-o", "json", "adapter")
	if err != nil {
		t.Fatal(err)
	}
	var a struct {
		Runtime struct {
			RuntimeName string `json:"runtimeName"`
		} `json:"runtime"`
	}
	if err := json.Unmarshal([]byte(out), &a); err != nil || a.Runtime.RuntimeName != rt.runtimeName {
		t.Fatalf("ipamctl adapter: runtime %q, %v; want %q: %s", a.Runtime.RuntimeName, err, rt.runtimeName, out)
	}
}
