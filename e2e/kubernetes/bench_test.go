package kubernetes

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
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

	"github.com/sandboxipam/sandboxipam/conformance/fixture"
	"github.com/sandboxipam/sandboxipam/internal/testsupport"
	"github.com/sandboxipam/sandboxipam/ipamd/kubeclient"
)

// The benchmark: benchPods pods of one Deployment on one node, from an API
// scale to all Running, benchRounds times per CNI.
const (
	benchName   = "bench"
	benchPods   = 110
	benchRounds = 3
	// bridgeNetwork is the reference CNI's network name; its conflist
	// sorts before ipamd's, so containerd takes it while it is there.
	bridgeNetwork  = "bench-bridge"
	bridgeConfList = "00-bench-bridge.conflist"
	// bridgeRanges are host-local's, outside the cluster CIDR.
	bridgeRangeV4, bridgeRangeV6 = "198.19.64.0/24", "fd00:19::/120"
	ipamdUser                    = "system:serviceaccount:kube-system:sandboxipam"
)

// TestClusterScaleBenchmark times, on node 1 of the three-node cluster,
// an API scale of a Deployment from 0 to 110 pods until all run, with
// sandboxipam and with the reference bridge + host-local plugins (Debian's
// containernetworking-plugins) in turns, and counts the API requests ipamd
// makes meanwhile (the API server's audit log). It runs only with
// SANDBOXIPAM_E2E_BENCH=1: it takes long.
func TestClusterScaleBenchmark(t *testing.T) {
	if os.Getenv("SANDBOXIPAM_E2E_BENCH") == "" {
		t.Skip("set SANDBOXIPAM_E2E_BENCH=1 (with SANDBOXIPAM_E2E_KUBERNETES=1) to run the cluster benchmark")
	}
	c := startCluster(t)
	t.Cleanup(func() { c.removeBench(t) })
	c.installDaemonSet(t)
	n := c.nodes[0]
	if err := c.api.create(context.Background(), "/apis/apps/v1/namespaces/default/deployments", benchDeployment(n.name)); err != nil {
		t.Fatal(err)
	}
	times := map[string][]time.Duration{}
	var requests []auditEntry
	for round := range benchRounds {
		order := []string{"sandboxipam", bridgeNetwork}
		if round%2 == 1 {
			slices.Reverse(order)
		}
		for _, network := range order {
			c.useNetwork(t, n, network)
			mark := c.auditMark(t)
			took := c.scaleBench(t, n, network)
			times[network] = append(times[network], took)
			if network == "sandboxipam" {
				requests = append(requests, c.auditSince(t, mark)...)
			}
			c.logf(t, "round %d: %d pods Running with %s in %s", round+1, benchPods, network, took.Round(time.Millisecond))
		}
	}
	for _, network := range []string{"sandboxipam", bridgeNetwork} {
		d := times[network]
		slices.Sort(d)
		t.Logf("BENCH %s: median %s of %d rounds (min %s, max %s): %v", network, d[len(d)/2].Round(time.Millisecond),
			len(d), d[0].Round(time.Millisecond), d[len(d)-1].Round(time.Millisecond), d)
	}
	perKind := map[string]int{}
	for _, e := range requests {
		perKind[e.Verb+" "+e.ObjectRef.Resource]++
	}
	pods := benchPods * benchRounds
	t.Logf("BENCH ipamd API requests during %d sandboxipam pod starts: %d (%.2f per 100 pods): %v",
		pods, len(requests), float64(len(requests))*100/float64(pods), perKind)
}

func benchDeployment(node string) *appsv1.Deployment {
	var zero int32
	grace := int64(1)
	noToken := false
	labels := map[string]string{"app": benchName}
	return &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Name: benchName, Namespace: "default"},
		Spec: appsv1.DeploymentSpec{
			Replicas: &zero,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					NodeSelector:                  map[string]string{"kubernetes.io/hostname": node},
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

// useNetwork makes node n's containerd use network: the bridge conflist
// is written (it sorts first) or removed, and the test waits until the
// runtime reports that network loaded.
func (c *cluster) useNetwork(t *testing.T, n *clusterNode, network string) {
	t.Helper()
	path := filepath.Join(n.private("/etc/cni/net.d"), bridgeConfList)
	if network == bridgeNetwork {
		conf := fmt.Sprintf(`{"cniVersion": "1.0.0", "name": %q, "plugins": [{"type": "bridge", "bridge": "cni-bench0",
 "isGateway": true, "ipMasq": false, "ipam": {"type": "host-local", "ranges": [[{"subnet": %q}], [{"subnet": %q}]]}}]}`,
			bridgeNetwork, bridgeRangeV4, bridgeRangeV6)
		if err := os.WriteFile(path, []byte(conf), 0o644); err != nil {
			t.Fatal(err)
		}
	} else if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	testsupport.WaitFor(t, time.Minute, n.name+"'s runtime loads network "+network, func(ctx context.Context) error {
		out, err := n.cri.cmd(ctx, "info")
		if err != nil {
			return err
		}
		var info struct {
			CNIConfig struct {
				Networks []struct {
					Config struct{ Name string } `json:"Config"`
				} `json:"Networks"`
			} `json:"cniconfig"`
		}
		if err := json.Unmarshal([]byte(out), &info); err != nil {
			return fmt.Errorf("crictl info: %w", err)
		}
		var names []string
		for _, nw := range info.CNIConfig.Networks {
			names = append(names, nw.Config.Name)
		}
		if !slices.Contains(names, network) {
			return fmt.Errorf("networks loaded: %v", names)
		}
		return nil
	})
}

// scaleBench scales the bench Deployment to benchPods, returns the time
// until all run, checks their addresses came from network, and scales it
// back to zero, waiting until node n runs none of them.
func (c *cluster) scaleBench(t *testing.T, n *clusterNode, network string) time.Duration {
	t.Helper()
	path := "/apis/apps/v1/namespaces/default/deployments/" + benchName
	began := time.Now()
	if err := c.api.mergePatch(context.Background(), path, map[string]any{"spec": map[string]any{"replicas": benchPods}}); err != nil {
		t.Fatal(err)
	}
	var pods []corev1.Pod
	testsupport.WaitFor(t, 10*time.Minute, fmt.Sprintf("%d %s pods run", benchPods, benchName), func(ctx context.Context) error {
		var err error
		pods, err = c.runningBenchPods(ctx)
		return err
	})
	took := time.Since(began)
	c.checkBenchAddrs(t, n, network, pods)
	if err := c.api.mergePatch(context.Background(), path, map[string]any{"spec": map[string]any{"replicas": 0}}); err != nil {
		t.Fatal(err)
	}
	testsupport.WaitFor(t, 10*time.Minute, "the bench pods are gone", func(ctx context.Context) error {
		sandboxes, err := n.cri.pods(ctx)
		if err != nil {
			return err
		}
		left := 0
		for _, s := range sandboxes {
			if s.Namespace == "default" && strings.HasPrefix(s.Name, benchName+"-") {
				left++
			}
		}
		var list corev1.PodList
		if err := c.api.get(ctx, "/api/v1/namespaces/default/pods?labelSelector="+url.QueryEscape("app="+benchName), &list); err != nil {
			return err
		}
		if left > 0 || len(list.Items) > 0 {
			return fmt.Errorf("%d sandboxes and %d pods left", left, len(list.Items))
		}
		return nil
	})
	return took
}

func (c *cluster) runningBenchPods(ctx context.Context) ([]corev1.Pod, error) {
	var list corev1.PodList
	if err := c.api.get(ctx, "/api/v1/namespaces/default/pods?labelSelector="+url.QueryEscape("app="+benchName), &list); err != nil {
		return nil, err
	}
	running := 0
	for _, p := range list.Items {
		if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
			running++
		}
	}
	if running != benchPods {
		return nil, fmt.Errorf("%d of %d running", running, benchPods)
	}
	return list.Items, nil
}

// checkBenchAddrs: every pod has one address per family, from the node's
// podCIDRs under sandboxipam or from host-local's ranges under the bridge,
// and no address twice.
func (c *cluster) checkBenchAddrs(t *testing.T, n *clusterNode, network string, pods []corev1.Pod) {
	t.Helper()
	ranges := []netip.Prefix{netip.MustParsePrefix(bridgeRangeV4), netip.MustParsePrefix(bridgeRangeV6)}
	if network != bridgeNetwork {
		info, err := c.getNode(context.Background(), n.name)
		if err != nil {
			t.Fatal(err)
		}
		ranges = info.CIDRs
	}
	seen := map[string]string{}
	for _, p := range pods {
		if len(p.Status.PodIPs) != 2 {
			t.Fatalf("pod %s under %s has addresses %v", p.Name, network, p.Status.PodIPs)
		}
		for _, a := range p.Status.PodIPs {
			ip := netip.MustParseAddr(a.IP)
			if !slices.ContainsFunc(ranges, func(r netip.Prefix) bool { return r.Contains(ip) }) {
				t.Fatalf("pod %s under %s has %s, outside %v", p.Name, network, ip, ranges)
			}
			if other, dup := seen[a.IP]; dup {
				t.Fatalf("%s on both %s and %s", a.IP, other, p.Name)
			}
			seen[a.IP] = p.Name
		}
	}
}

// auditEntry is the part of an audit event the benchmark counts.
type auditEntry struct {
	Verb      string `json:"verb"`
	UserAgent string `json:"userAgent"`
	User      struct {
		Username string `json:"username"`
	} `json:"user"`
	ObjectRef struct {
		Resource string `json:"resource"`
	} `json:"objectRef"`
}

// auditMark is the audit log's current size.
func (c *cluster) auditMark(t *testing.T) int64 {
	t.Helper()
	fi, err := os.Stat(auditLogPath(filepath.Join(c.dir, "cp")))
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// auditSince returns ipamd's requests logged after mark.
func (c *cluster) auditSince(t *testing.T, mark int64) []auditEntry {
	t.Helper()
	f, err := os.Open(auditLogPath(filepath.Join(c.dir, "cp")))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Seek(mark, 0); err != nil {
		t.Fatal(err)
	}
	var out []auditEntry
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var e auditEntry
		if json.Unmarshal(sc.Bytes(), &e) != nil {
			continue
		}
		if e.User.Username == ipamdUser || strings.HasPrefix(e.UserAgent, kubeclient.UserAgent) {
			out = append(out, e)
		}
	}
	return out
}

// removeBench deletes the bench Deployment and waits until node 1 runs
// none of its sandboxes, before the DaemonSet goes.
func (c *cluster) removeBench(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	_ = c.api.delete(ctx, "/apis/apps/v1/namespaces/default/deployments/"+benchName)
	waitNoReadySandboxes(ctx, t, c.nodes[0].cri, "default")
	_ = os.Remove(filepath.Join(c.nodes[0].private("/etc/cni/net.d"), bridgeConfList))
	c.removeWorkloads(t)
}
