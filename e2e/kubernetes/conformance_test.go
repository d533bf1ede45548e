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
// kube-proxy on every node and CoreDNS. Every test's result and time is
// logged as a table; the test fails if any of them fails. .ci/run runs it.
func TestConformancePool(t *testing.T) {
	requireConformance(t)
	c := startConformanceCluster(t, true)
	c.runE2E(t, conformanceSuite)
}

// TestGranularChecksPool and TestGranularChecksNode run the Networking
// Granular Checks for Pods and Services against the three-node cluster in
// pool mode and in node mode (each node's podCIDRs, the routes
// component): about 20 minutes each, so make e2e-conformance runs them and
// .ci/run does not.
func TestGranularChecksPool(t *testing.T) {
	requireConformance(t)
	c := startConformanceCluster(t, true)
	c.runE2E(t, granularSuite)
}

func TestGranularChecksNode(t *testing.T) {
	requireConformance(t)
	c := startConformanceCluster(t, false)
	c.runE2E(t, granularSuite)
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
