package kubernetes

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sandboxipam/sandboxipam/internal/testenv"
)

// The suites of e2e.test the conformance tests run (issue 38). The focus
// and skip are Go regular expressions over the full test names.
var (
	conformanceSuite = e2eSuite{
		name:  "conformance",
		focus: `\[sig-network\].*\[Conformance\]`,
	}
	granularSuite = e2eSuite{
		name:  "granular",
		focus: `\[sig-network\] Networking Granular Checks: (Pods|Services)`,
		skips: []e2eSkip{{
			// [Feature:SCTPConnectivity] and "should allow creating a Pod
			// with an SCTP HostPort".
			pattern: `SCTP`,
			reason:  "SCTP: the nodes' kernel module is the host's, and loading it would change the host",
		}, {
			pattern: `\[Disruptive\]`,
			reason:  "disruptive tests restart kubelet or kube-proxy through SSH, which these nodes do not serve",
		}},
	}
	// The [Feature:IPv6DualStack] tests (issue 46), in two suites.
	// dualStackSuite: pods and nodes with addresses of both families, pod
	// to pod on either across the nodes, Services of either family or of
	// both (about 4 minutes, 3 of them the 10 s of curls from each of 3
	// clients to each of 6 server addresses).
	dualStackSuite = e2eSuite{
		name:  "dualstack",
		focus: `\[sig-network\] \[Feature:IPv6DualStack\] should`,
	}
	// dualStackGranularSuite: the Granular Checks of Services on the
	// secondary family (IPv6), from pods and from the host network (about
	// 13 minutes).
	dualStackGranularSuite = e2eSuite{
		name:  "dualstack-granular",
		focus: `\[sig-network\] \[Feature:IPv6DualStack\] Granular Checks: Services Secondary IP Family`,
		skips: []e2eSkip{{
			// "Granular Checks: Services Secondary IP Family ... should
			// function for pod-Service: sctp [Feature:SCTPConnectivity]".
			pattern: `SCTP`,
			reason:  "SCTP: the nodes' kernel module is the host's, and loading it would change the host",
		}},
	}
)

// requireConformance skips unless the conformance suite was asked for
// (make e2e-conformance): it takes about an hour and builds e2e.test.
func requireConformance(t *testing.T) {
	t.Helper()
	if os.Getenv("SANDBOXIPAM_E2E_CONFORMANCE") == "" {
		t.Skip("set SANDBOXIPAM_E2E_CONFORMANCE=1 (make e2e-conformance) to run Kubernetes' network conformance suite")
	}
}

// TestConformancePool runs the [sig-network] Conformance tests of
// Kubernetes v1.37.2's e2e.test, unmodified, against the three-node
// cluster in pool mode (the pool, reclaimer and routes components), with
// kube-proxy on every node and CoreDNS, and then, on the same cluster, the
// [Feature:IPv6DualStack] tests but their Granular Checks. Every test's
// result and time is logged as a table; the test fails if any of them
// fails. .ci/run runs it.
func TestConformancePool(t *testing.T) {
	requireConformance(t)
	c := startConformanceCluster(t, true)
	c.runSuites(t, conformanceSuite, dualStackSuite)
}

// TestGranularChecksPool and TestGranularChecksNode run the Networking
// Granular Checks for Pods and Services against the three-node cluster in
// pool mode and in node mode (each node's podCIDRs, the routes
// component), and then on the same cluster the Granular Checks of the
// secondary family ([Feature:IPv6DualStack]); the node-mode cluster runs
// the other [Feature:IPv6DualStack] tests too (pool mode runs them in
// TestConformancePool). About 35 minutes each, so make e2e-conformance
// runs them and .ci/run does not.
func TestGranularChecksPool(t *testing.T) {
	requireConformance(t)
	c := startConformanceCluster(t, true)
	c.runSuites(t, granularSuite, dualStackGranularSuite)
}

func TestGranularChecksNode(t *testing.T) {
	requireConformance(t)
	c := startConformanceCluster(t, false)
	c.runSuites(t, granularSuite, dualStackSuite, dualStackGranularSuite)
}

// runSuites runs each suite on the cluster, one after the other, each a
// subtest named after it: a failure of one does not keep the next from
// running, and -run 'TestGranularChecksNode/^dualstack$' runs that one
// alone on a fresh cluster.
func (c *cluster) runSuites(t *testing.T, suites ...e2eSuite) {
	t.Helper()
	for _, s := range suites {
		t.Run(s.name, func(t *testing.T) { c.runE2E(t, s) })
	}
}

// startConformanceCluster brings up the three-node cluster in pool or
// node mode with what the upstream tests need of a real cluster:
// kube-proxy on every node, the images they run imported into every
// node's runtime, CoreDNS, and the hub routing to the pods as a
// control-plane node would.
func startConformanceCluster(t *testing.T, pool bool) *cluster {
	t.Helper()
	for _, b := range []string{"e2e.test", "kubectl", "kube-proxy", "agnhost", "busybox", "netcat"} {
		conformanceBinary(t, b)
	}
	c := startCluster(t)
	t.Cleanup(func() { c.removeWorkloads(t) })
	archives := buildConformanceImages(t, filepath.Join(c.dir, "conformance-images"))
	pause, err := testenv.BuildPauseImage(context.Background(), filepath.Join(c.dir, "pause"), upstreamPauseRef)
	if err != nil {
		t.Fatal(err)
	}
	archives.pause = pause
	cidrs := clusterCIDRv4 + "," + clusterCIDRv6
	if pool {
		cidrs = poolCIDRv4 + "," + poolCIDRv6
	}
	for _, n := range c.nodes {
		n.importConformanceImages(t, archives)
		n.startKubeProxy(t, c.cp.Kubeconfig, cidrs)
	}
	c.checkKubeProxyChains(t)
	if pool {
		c.installPoolCRDs(t)
		c.applyPool(t)
		c.waitDaemonSet(t, nil)
		c.waitNodesReady(t)
	} else {
		c.installDaemonSet(t)
	}
	c.followHubRoutes(t, pool)
	// Before the workloads go (cleanups run last-in first-out): CoreDNS's
	// and the suites' pods need ipamd for their DELs.
	t.Cleanup(func() { c.removeConformanceWorkloads(t) })
	c.installCoreDNS(t)
	return c
}

// e2eSuite is one run of e2e.test: what it focuses on, and what it skips
// and why.
type e2eSuite struct {
	name, focus string
	skips       []e2eSkip
}

// e2eSkip is a --ginkgo.skip pattern and the reason docs/testing.md gives.
type e2eSkip struct{ pattern, reason string }

func (s e2eSuite) skip() string {
	var ps []string
	for _, k := range s.skips {
		ps = append(ps, k.pattern)
	}
	return strings.Join(ps, "|")
}
