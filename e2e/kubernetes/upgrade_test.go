package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sandboxipam/sandboxipam/internal/release"
	"github.com/sandboxipam/sandboxipam/internal/testsupport"

	deploy "github.com/sandboxipam/sandboxipam/deploy/kubernetes"
)

// duringRollout is how many pods each rollout adds while it runs (two a
// node): their ADDs may meet a node's ipamd stopping or starting.
const duringRollout = 2 * clusterNodes

// TestUpgradeManifests renders the previous release's manifests from its
// own tree and this tree's from the working tree, as the cluster tests
// apply them, and checks that the upgrade changes the image every
// container runs: otherwise applying this release would roll nothing.
// Then it builds the previous release's image into its cache, if it is
// not there, before any cluster starts.
func TestUpgradeManifests(t *testing.T) {
	requireUpgrade(t)
	tree := previousTree(t)
	var prevImage string
	for _, pool := range []bool{false, true} {
		prev := renderRelease(t, release.Previous.Version, tree, pool)
		cur := renderRelease(t, release.Current.Version, testsupport.Root(t), pool)
		if prev.image == cur.image {
			t.Fatalf("pool %v: %s and %s both name the image %s: the DaemonSet would not roll", pool, prev.version, cur.version, cur.image)
		}
		if !strings.HasSuffix(cur.image, ":"+release.Current.Version) {
			t.Fatalf("this tree's manifests name %s, not a tag of %s", cur.image, release.Current.Version)
		}
		t.Logf("pool %v: %s: %d objects, image %s; %s: %d objects, image %s", pool,
			prev.version, len(prev.objs), prev.image, cur.version, len(cur.objs), cur.image)
		prevImage = prev.image
	}
	previousImage(t, tree, prevImage)
}

// TestUpgradePool and TestUpgradeNode upgrade the three-node cluster from
// the previous release (internal/release: its image built by its own
// cmd/mkimage, its manifests rendered from its own tree) to this tree and
// roll it back, in pool mode (components pool, reclaimer and routes) and
// in node mode (each Node's podCIDRs, components/routes), with 30 agnhost
// netexec pods spread over the nodes and every pod asking one pod on
// each other node for its name every 200 ms throughout (issue 45). Four
// rollouts on one cluster:
//
//   - this release's manifests applied over the previous release's;
//   - kubectl rollout undo of the DaemonSet (and the reclaimer's
//     Deployment), which leaves this release's CRDs, RBAC and ConfigMap
//     beside the previous release's pods;
//   - this release applied again;
//   - the previous release's manifests applied again.
//
// Each rollout goes node by node (the DaemonSet deletes a ready ipamd
// only once the new one of each node it took before was ready: see
// budgetWatch) and adds six pods while it runs. After each: every pod
// kept its sandbox and addresses exactly, the new pods got theirs, the API server, every
// runtime and every ipamd (ipamctl pods) agree and no address is held
// twice (nor ever during the rollout, as the API server shows it), no
// probe failed, and `ipamctl check --cluster` finds nothing. With every
// pod deleted, no node holds an assignment, and in pool mode each node
// keeps one block per family (the high watermark). The figures (each
// node's rollout, the ADDs that waited, the traffic) are logged as a
// table: BENCHMARKS.md, "Upgrade and rollback".
func TestUpgradePool(t *testing.T) { upgradeAndRollBack(t, true) }

func TestUpgradeNode(t *testing.T) { upgradeAndRollBack(t, false) }

// upgradeRun is one cluster's upgrade and rollbacks.
type upgradeRun struct {
	c        *cluster
	pool     bool
	check    rangeCheck
	replicas int
	state    clusterState
	traffic  *prober
	figures  []phaseFigures
}

// phaseFigures are one rollout's measurements.
type phaseFigures struct {
	name, image string
	nodes       []nodeRollout
	daemonSet   time.Duration // from the change to every node's new ipamd ready
	reclaimer   time.Duration // from the change to the reclaimer rolled (pool mode)
	maxDown     int
	waits       []podWait
	traffic     trafficFigures
	load        string // the machine's load averages at the rollout's end
}

// loadAverage is /proc/loadavg's three load averages: what the machine's
// other work made of the figures.
func loadAverage(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join(strings.Fields(string(b))[:3], " ")
}

func upgradeAndRollBack(t *testing.T, pool bool) {
	requireUpgrade(t)
	for _, b := range []string{"kubectl", "agnhost", "busybox", "netcat"} {
		conformanceBinary(t, b)
	}
	began := time.Now()
	prevTree := previousTree(t)
	prev := renderRelease(t, release.Previous.Version, prevTree, pool)
	cur := renderRelease(t, release.Current.Version, testsupport.Root(t), pool)
	if prev.image == cur.image {
		t.Fatalf("%s and %s both name the image %s: the DaemonSet would not roll (TestUpgradeManifests)", prev.version, cur.version, cur.image)
	}
	prevArchive := previousImage(t, prevTree, prev.image)

	c := startCluster(t)
	// The workloads go before kubelets and the control plane stop
	// (cleanups run last-in first-out), so every ipamd sees its DELs.
	t.Cleanup(func() { c.removeWorkloads(t) })
	spec, err := agnhostSpec(conformanceBinary(t, "agnhost"))
	if err != nil {
		t.Fatal(err)
	}
	agnhost := filepath.Join(c.dir, "agnhost.oci.tar")
	writeImage(t, spec, agnhostRef, agnhost)
	c.importImages(t, cur.image, prevArchive, agnhost)
	c.logf(t, "every node holds %s (%s), %s (this tree) and agnhost", prev.image, prev.version, cur.image)

	u := &upgradeRun{c: c, pool: pool, check: inNodeCIDRs}
	if pool {
		u.check = c.inNodeBlocks().check
	}
	c.installRelease(t, prev, pool)
	ipamdImages(t, c.waitDaemonSet(t, nil), prev.image)
	c.waitNodesReady(t)
	if pool {
		c.waitReclaimerRolled(t, prev.image)
		c.waitReclaimerLeader(t)
	}
	c.logf(t, "previous release %s (commit %.12s) runs on every node", prev.version, release.Previous.Commit)

	if err := c.api.create(context.Background(), "/apis/apps/v1/namespaces/default/deployments", netexecDeployment(clusterWebReplicas)); err != nil {
		t.Fatal(err)
	}
	u.replicas = clusterWebReplicas
	u.state = c.waitAgree(t, u.replicas, u.check)
	var addrs []string
	for _, n := range c.nodes {
		names := u.state.onNode(n.name)
		if len(names) != clusterWebReplicas/clusterNodes {
			t.Fatalf("%s runs %d pods, want %d (topology spread)", n.name, len(names), clusterWebReplicas/clusterNodes)
		}
		for _, name := range names {
			addrs = append(addrs, fmt.Sprintf("%s@%s %s", name, n.name, strings.Join(u.state.pods[name].IPs, ",")))
		}
	}
	c.logf(t, "%d netexec pods, 10 a node, on %s:\n  %s", u.replicas, prev.version, strings.Join(addrs, "\n  "))
	u.traffic = c.startProbes(t, u.state)
	// Before the workloads go (cleanups run last-in first-out).
	t.Cleanup(u.traffic.halt)
	u.clean(t, "before the upgrade")

	u.phase(t, "upgrade "+prev.version+" -> "+cur.version, cur, func() { c.applyRelease(t, cur) })
	u.phase(t, "kubectl rollout undo", prev, func() {
		c.logf(t, "%s", c.kubectl(t, "rollout", "undo", "daemonset/sandboxipam", "-n", "kube-system"))
		if pool {
			c.logf(t, "%s", c.kubectl(t, "rollout", "undo", "deployment/"+deploy.ReclaimerName, "-n", "kube-system"))
		}
	})
	u.phase(t, "upgrade again", cur, func() { c.applyRelease(t, cur) })
	u.phase(t, "previous manifests applied again", prev, func() { c.applyRelease(t, prev) })

	u.traffic.halt()
	// Between the rollouts too.
	total := u.traffic.figures(u.traffic.began, 0)
	if err := total.check(u.traffic.began); err != nil {
		t.Errorf("over the whole test: %v", err)
	}

	// Every pod goes: nothing may be left held anywhere.
	c.scaleWeb(t, 0)
	state := c.waitAgree(t, 0, u.check)
	if pool {
		blocks := c.waitBlocks(t, "exactly one block of each family", func(v4, v6 int) bool { return v4 == 1 && v6 == 1 })
		c.checkBlocksHeld(t)
		c.logf(t, "every pod deleted: no assignment on any node; blocks returned down to the high watermark: %v", blocks)
	} else {
		c.checkPools(t, state)
		c.logf(t, "every pod deleted: every node's pool exactly its podCIDRs, nothing assigned")
	}
	u.state = state
	u.clean(t, "with every pod gone")
	u.report(t, total, time.Since(began))
}

// phase makes the change act and follows the rollout it starts to its
// end, with the assertions of upgradeAndRollBack; want is the release
// the cluster then runs.
func (u *upgradeRun) phase(t *testing.T, name string, want releaseManifests, act func()) {
	t.Helper()
	c := u.c
	before := u.state
	old := c.ipamdPodUIDs(t)
	w := c.watchRollout(old, before)
	defer w.halt()
	budget, err := c.watchBudget(t.Context(), old)
	if err != nil {
		t.Fatalf("%s: watch the ipamd pods: %v", name, err)
	}
	mark, began := u.traffic.mark(), time.Now()
	c.logf(t, "%s: begins", name)
	act()
	testsupport.WaitFor(t, 2*time.Minute, name+": the DaemonSet begins to roll", func(context.Context) error {
		if w.started() {
			return nil
		}
		return errors.New("every node's old ipamd still runs")
	})
	u.replicas += duringRollout
	c.scaleWeb(t, u.replicas)
	c.logf(t, "%s: a node's old ipamd is going; the Deployment scaled to %d", name, u.replicas)
	ipamdImages(t, c.waitDaemonSet(t, old), want.image)
	testsupport.WaitFor(t, time.Minute, name+": the watch saw every node roll", func(context.Context) error { return w.everyNodeRolled() })
	f := phaseFigures{name: name, image: want.image, nodes: w.rollouts(), daemonSet: time.Since(began)}
	if u.pool {
		c.waitReclaimerRolled(t, want.image)
		f.reclaimer = time.Since(began)
		c.waitReclaimerLeader(t)
	}
	u.state = c.waitAgree(t, u.replicas, u.check)
	testsupport.WaitFor(t, 30*time.Second, name+": the watch saw the new pods ready", func(context.Context) error { return w.sawReady(u.state) })
	w.halt()
	f.maxDown = w.maxDown
	if len(w.problems) > 0 {
		t.Fatalf("%s: during the rollout:\n  %s", name, strings.Join(w.problems, "\n  "))
	}
	taken, notReady, problems, err := budget.stop()
	switch {
	case err != nil:
		t.Fatalf("%s: the watch of the ipamd pods missed changes: %v", name, err)
	case len(problems) > 0:
		t.Errorf("%s: not node by node (maxUnavailable 1):\n  %s", name, strings.Join(problems, "\n  "))
	case len(taken)+len(notReady) != len(c.nodes):
		t.Errorf("%s: the watch saw %v taken ready and %v replaced while not ready, want every one of %d nodes once", name, taken, notReady, len(c.nodes))
	}
	if len(notReady) > 0 {
		c.logf(t, "%s: replaced while not ready, outside maxUnavailable as the DaemonSet controller does: %v (%d nodes at once without a ready ipamd)",
			name, notReady, f.maxDown)
	}
	for pod, p := range before.pods {
		q, ok := u.state.pods[pod]
		if !ok || q.Node != p.Node || q.SandboxID != p.SandboxID || !slices.Equal(q.IPs, p.IPs) {
			t.Fatalf("%s: pod %s on %s (sandbox %.12s) had %v, now %+v (present %v)", name, pod, p.Node, p.SandboxID, p.IPs, q, ok)
		}
	}
	f.waits = w.podWaits(t, u.state)
	if len(f.waits) != duringRollout {
		t.Fatalf("%s: %d new pods, want %d: %+v", name, len(f.waits), duringRollout, f.waits)
	}
	f.traffic = u.traffic.figures(began, mark)
	for _, fl := range f.traffic.fails {
		if w.rollingAt(fl.from.Node, fl.at) || w.rollingAt(fl.to.Node, fl.at) {
			f.traffic.rolling++
		}
	}
	f.load = loadAverage(t)
	if err := f.traffic.check(u.traffic.began); err != nil {
		t.Errorf("%s: %v", name, err)
	} else if len(f.traffic.fails) > 0 {
		c.logf(t, "%s: within the bound: %s", name, f.traffic.describe(u.traffic.began))
	}
	if u.pool {
		c.checkBlocksHeld(t)
	}
	u.clean(t, "after "+name)
	c.logf(t, "%s: done: %s runs on every node; nodes rolled %s; DaemonSet %.1fs, reclaimer %.1fs; %d pods kept their sandboxes and addresses, %d added, %s; traffic %d probes, %d failed (%d not a timeout, %d on a path through a node whose ipamd was being replaced), the longest interruption %v; load %s",
		name, want.image, formatRollouts(f.nodes), f.daemonSet.Seconds(), f.reclaimer.Seconds(), len(before.pods), len(f.waits), formatWaits(f.waits),
		f.traffic.probes, len(f.traffic.fails), f.traffic.hard(), f.traffic.rolling, f.traffic.longest.Round(time.Millisecond), f.load)
	u.figures = append(u.figures, f)
}

// clean runs the comparison of `ipamctl check --cluster`: it must find
// nothing and compare at least every pod of the Deployment.
func (u *upgradeRun) clean(t *testing.T, when string) {
	t.Helper()
	res := u.c.clusterCheck(t)
	if len(res.Findings) != 0 || res.Pods < len(u.state.pods) {
		t.Fatalf("ipamctl check --cluster %s: %d pods compared, findings %+v; want at least %d, none", when, res.Pods, res.Findings, len(u.state.pods))
	}
	u.c.logf(t, "ipamctl check --cluster %s: %d pods compared, nothing found", when, res.Pods)
}

// formatWaits: the longest wait of the pods added, and the ones whose
// sandbox creation failed first.
func formatWaits(ws []podWait) string {
	var longest time.Duration
	var retried []string
	for _, w := range ws {
		longest = max(longest, w.took)
		if w.failed > 0 {
			retried = append(retried, fmt.Sprintf("%s@%s %d failed ADDs (the last: %q), ready after %.1fs", w.pod, w.node, w.failed, w.why, w.took.Seconds()))
		}
	}
	return fmt.Sprintf("the slowest ready after %.1fs, %d waited on a failed ADD %v", longest.Seconds(), len(retried), retried)
}

// report logs the figures as the table BENCHMARKS.md keeps.
func (u *upgradeRun) report(t *testing.T, total trafficFigures, took time.Duration) {
	t.Helper()
	mode := "node"
	if u.pool {
		mode = "pool"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "upgrade figures, %s mode (%d nodes, %d pods probed):\n", mode, clusterNodes, clusterWebReplicas)
	fmt.Fprintf(&b, "| rollout | per node (s, in order) | DaemonSet (s) | reclaimer (s) | pods added: slowest ready (s) | ADDs failed first | probes | failed (timeouts; via a rolling node) | longest interruption | load |\n")
	for _, f := range u.figures {
		var nodes []string
		for _, r := range f.nodes {
			nodes = append(nodes, fmt.Sprintf("%.1f", r.took.Seconds()))
		}
		var slowest time.Duration
		var failed int32
		for _, w := range f.waits {
			slowest = max(slowest, w.took)
			failed += w.failed
		}
		reclaimer := "-"
		if u.pool {
			reclaimer = fmt.Sprintf("%.1f", f.reclaimer.Seconds())
		}
		fmt.Fprintf(&b, "| %s | %s | %.1f | %s | %.1f | %d | %d | %d (%d; %d) | %v | %s |\n", f.name, strings.Join(nodes, ", "),
			f.daemonSet.Seconds(), reclaimer, slowest.Seconds(), failed, f.traffic.probes, len(f.traffic.fails),
			len(f.traffic.fails)-f.traffic.hard(), f.traffic.rolling, f.traffic.longest.Round(time.Millisecond), f.load)
	}
	fmt.Fprintf(&b, "traffic over the whole test: %d probes, %d failed (%d not a timeout), longest interruption %v (bound %v); test %v\n",
		total.probes, len(total.fails), total.hard(), total.longest.Round(time.Millisecond), maxInterruption, took.Round(time.Second))
	u.c.logf(t, "%s", b.String())
}
