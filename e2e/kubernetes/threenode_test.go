package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/sandboxipam/sandboxipam/internal/image"
	"github.com/sandboxipam/sandboxipam/internal/kubeenv"
	"github.com/sandboxipam/sandboxipam/internal/scenario"
	"github.com/sandboxipam/sandboxipam/internal/testsupport"
)

// clusterNodes is how many nodes the cluster test runs.
const clusterNodes = 3

// e2eImageRef is the tag the test imports the project's image under and
// sets in the DaemonSet, as "kustomize edit set image" would: a node
// running anything else would not find it (imagePullPolicy IfNotPresent,
// no registry).
const e2eImageRef = "localhost/sandboxipam/sandboxipam:e2e-cluster"

// cluster is the test's control plane, in the hub namespace, and its
// nodes.
type cluster struct {
	dir   string
	hub   string // the hub's network namespace
	cp    *controlPlane
	api   *apiClient
	nodes []*clusterNode
	// plugin is the CNI plugin binary the image holds.
	plugin []byte
	began  time.Time
	// down names the nodes whose kubelet is stopped and whose Node is
	// deleted: the checks of every node leave them out.
	down map[string]bool
}

// live are the nodes not down.
func (c *cluster) live() []*clusterNode {
	var out []*clusterNode
	for _, n := range c.nodes {
		if !c.down[n.name] {
			out = append(out, n)
		}
	}
	return out
}

func (c *cluster) logf(t *testing.T, format string, args ...any) {
	t.Helper()
	t.Logf("[%s] %s", time.Since(c.began).Round(time.Millisecond), fmt.Sprintf(format, args...))
}

// controllerManagerArgs make kube-controller-manager hand every node one
// IPv4 and one IPv6 range. The pod garbage collector is off: it deletes
// the pods of a Node that is gone for 40 s, and the test deletes a Node
// and registers it again, with its pods running, on purpose.
func controllerManagerArgs() []string {
	return []string{
		"--allocate-node-cidrs=true",
		"--cluster-cidr=" + clusterCIDRv4 + "," + clusterCIDRv6,
		fmt.Sprintf("--node-cidr-mask-size-ipv4=%d", nodeMaskV4),
		fmt.Sprintf("--node-cidr-mask-size-ipv6=%d", nodeMaskV6),
		"--service-cluster-ip-range=" + serviceCIDRs,
		"--controllers=*,-pod-garbage-collector-controller",
	}
}

// startCluster brings up the hub, the control plane and three nodes, each
// node registered with its podCIDRs, and checks the host is left as found.
func startCluster(t *testing.T) *cluster {
	t.Helper()
	kubeletBin, crictlBin := requireE2E(t)
	bins := kubeenv.BinariesIn(cacheDir())
	if err := bins.Missing(); err != nil {
		t.Fatal(err)
	}
	guardHost(t, append(slices.Clone(hardCodedDirs), "/var/run/kubernetes", "/etc/kubernetes"))
	guardHostNetwork(t)
	c := &cluster{began: time.Now(), down: map[string]bool{}}
	dir, err := os.MkdirTemp("/tmp", "sbxk8m-")
	if err != nil {
		t.Fatal(err)
	}
	c.dir = dir
	t.Cleanup(func() { os.RemoveAll(dir) })
	archive := c.buildImage(t)
	c.hub = startHub(t, dir)
	c.cp = startControlPlaneAt(t, kubeenv.Options{
		Binaries: bins, Dir: filepath.Join(dir, "cp"), NetNS: c.hub,
		Address: hubIPv4, BindAddress: "0.0.0.0", APIPort: 443, ServiceCIDR: serviceCIDRs,
		// The hub's address is no loopback one: the API server publishes
		// it as the kubernetes Service's endpoints (kubeenv turns the
		// reconciler off), which kube-proxy, when it runs, routes to.
		APIServerArgs: append([]string{"--kubelet-preferred-address-types=InternalIP", "--endpoint-reconciler-type=lease"},
			auditArgs(t, filepath.Join(dir, "cp"))...),
	}, controllerManagerArgs()...)
	c.api = c.cp.api
	c.logf(t, "control plane up in the hub namespace")
	nb := nodeBinaries{kubelet: kubeletBin, crictl: crictlBin, imageArchive: archive, kubeconfig: c.cp.Kubeconfig}
	for i := 1; i <= clusterNodes; i++ {
		c.nodes = append(c.nodes, startNode(t, dir, c.hub, i, nb))
	}
	for _, n := range c.nodes {
		c.waitNodeCIDRs(t, n.name, "")
	}
	c.logf(t, "%d nodes registered with their podCIDRs", clusterNodes)
	return c
}

// buildImage builds the project's image as make image does, tagged
// e2eImageRef, and returns its archive; the nodes import it.
func (c *cluster) buildImage(t *testing.T) string {
	t.Helper()
	root, err := scenario.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(c.dir, "image")
	archives, err := image.BuildProjectArchives(context.Background(), root, filepath.Join(out, "bin"), image.DefaultCABundle, e2eImageRef, out)
	if err != nil {
		t.Fatal(err)
	}
	c.plugin, err = os.ReadFile(filepath.Join(out, "bin", filepath.FromSlash(image.CNIPluginPath)))
	if err != nil {
		t.Fatal(err)
	}
	c.logf(t, "image %s built", archives.Digest)
	return archives.OCI
}

// nodeInfo is what the API server says of a node.
type nodeInfo struct {
	UID      string
	CIDRs    []netip.Prefix // one per family, IPv4 first
	Ready    bool
	Internal []netip.Addr
}

func (c *cluster) getNode(ctx context.Context, name string) (nodeInfo, error) {
	var n corev1.Node
	if err := c.api.get(ctx, "/api/v1/nodes/"+name, &n); err != nil {
		return nodeInfo{}, err
	}
	info := nodeInfo{UID: string(n.UID)}
	for _, s := range n.Spec.PodCIDRs {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return info, fmt.Errorf("node %s podCIDR %q: %w", name, s, err)
		}
		info.CIDRs = append(info.CIDRs, p)
	}
	slices.SortFunc(info.CIDRs, func(a, b netip.Prefix) int { return a.Addr().BitLen() - b.Addr().BitLen() })
	for _, cond := range n.Status.Conditions {
		if cond.Type == corev1.NodeReady {
			info.Ready = cond.Status == corev1.ConditionTrue
		}
	}
	for _, a := range n.Status.Addresses {
		if a.Type == corev1.NodeInternalIP {
			if ip, err := netip.ParseAddr(a.Address); err == nil {
				info.Internal = append(info.Internal, ip)
			}
		}
	}
	return info, nil
}

// waitNodeCIDRs waits until node name is registered, with a UID other
// than notUID, and has one IPv4 and one IPv6 podCIDR.
func (c *cluster) waitNodeCIDRs(t *testing.T, name, notUID string) nodeInfo {
	t.Helper()
	var info nodeInfo
	testsupport.WaitFor(t, 3*time.Minute, name+" registers and gets its podCIDRs", func(ctx context.Context) error {
		var err error
		if info, err = c.getNode(ctx, name); err != nil {
			return err
		}
		if info.UID == notUID {
			return errors.New("still the old Node")
		}
		if len(info.CIDRs) != 2 || !info.CIDRs[0].Addr().Is4() || !info.CIDRs[1].Addr().Is6() {
			return fmt.Errorf("podCIDRs %v", info.CIDRs)
		}
		return nil
	})
	return info
}

// auditArgs make the API server log every request's metadata (user,
// user agent, verb, resource) once, as it is received (a watch, too, long
// before it completes): the benchmark counts ipamd's requests from it.
func auditArgs(t *testing.T, dir string) []string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	policy := filepath.Join(dir, "audit-policy.yaml")
	if err := os.WriteFile(policy, []byte(`apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["ResponseStarted", "ResponseComplete"]
rules:
  - level: Metadata
`), 0o644); err != nil {
		t.Fatal(err)
	}
	return []string{"--audit-policy-file=" + policy, "--audit-log-path=" + auditLogPath(dir), "--audit-log-format=json", "--audit-log-maxbackup=0"}
}

func auditLogPath(cpDir string) string { return filepath.Join(cpDir, "audit.log") }
