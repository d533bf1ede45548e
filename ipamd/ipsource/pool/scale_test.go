package pool_test

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sandboxipam/sandboxipam/internal/clusterfixture"
	"github.com/sandboxipam/sandboxipam/internal/testsupport"
	"github.com/sandboxipam/sandboxipam/ipamd/datastore"
	"github.com/sandboxipam/sandboxipam/ipamd/ipsource/pool"
	"github.com/sandboxipam/sandboxipam/ipamd/ipsource/pool/poolconf"
)

// BenchmarkPoolClaimScale is issue 23's scale measurement: POOL_SCALE_NODES
// (default 1000) simulated nodes, each its own pool source, datastore and
// API connection, start at once against the test's real kube-apiserver
// and each ADDs POOL_SCALE_PODS (default 100) pods as fast as it can, with
// a 198.18.0.0/15 pool of /26 blocks (2,048 blocks of 62 addresses) and
// the default watermarks (claim below 16 free, interval 1s). It reports
// claim latency percentiles (first create to the record on disk),
// AlreadyExists conflicts, and API requests per 100 pods during the ADDs,
// which must equal the creates: 0 per ADD. Run it alone:
//
//	go test -run '^$' -bench BenchmarkPoolClaimScale -benchtime 1x -timeout 30m ./ipamd/ipsource/pool
//
// (make bench-pool). Checkpoints go to /dev/shm when it exists: the figure
// is the API server's, not the disk's.
func BenchmarkPoolClaimScale(b *testing.B) {
	nodesN, podsN := envInt(b, "POOL_SCALE_NODES", 1000), envInt(b, "POOL_SCALE_PODS", 100)
	a, admin := clusterfixture.StartCounted(b)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel() // before the nodes' clean-ups, which wait for their sources to stop
	if err := clusterfixture.CreatePool(ctx, admin.Dynamic, "default", 26, 122, "198.18.0.0/15"); err != nil {
		b.Fatal(err)
	}
	dir := shmDir(b)
	rec := &claimRecorder{}
	start := time.Now()
	nodes := make([]*simNode, nodesN)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 50) // Node creates and client set-up, 50 at a time
	for i := range nodes {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			nodes[i] = startSim(ctx, b, a, admin, dir, fmt.Sprintf("sim-%04d", i), simNodeAddress(i), poolconf.DefaultConfig(), rec.add)
		})
	}
	wg.Wait()
	for _, n := range nodes {
		testsupport.Wait(b, n.name+"'s first block", func() (bool, string) { return len(n.poolBlocks()) == 1, "" })
	}
	booted := time.Since(start)
	b.ResetTimer()
	pods := runPods(ctx, b, nodes, podsN)
	b.StopTimer()
	rec.report(b, nodesN, podsN, booted, pods)
	if pods.dups != 0 {
		b.Fatalf("%d addresses held by two pods", pods.dups)
	}
}

// simNodeAddress is simulated node i's InternalIP: the nodes sit in one
// IPv6 subnet, one after the other, as a cluster's nodes sit in its node
// subnet (the probe starts there; an IPv6 subnet so that no address of
// the 198.18.0.0/15 pool is also a node's).
func simNodeAddress(i int) string {
	return netip.AddrFrom16([16]byte{0: 0xfd, 1: 0x00, 2: 0x5c, 3: 0xa1, 14: byte(i >> 8), 15: byte(i)}).String()
}

// podRun is the pods phase's figures.
type podRun struct {
	took                     time.Duration
	requests, writes, waited uint64
	// blockWrites are writes of IPBlocks; the rest of writes are Events
	// (Fenced, when a Lease lapses under this load).
	blockWrites uint64
	creates     int
	// liftWrites are the IPBlock updates a fence lift sends (one per held
	// block): under this benchmark's overload, Leases lapse and fence.
	liftWrites int
	dups       int
}

// runPods ADDs podsN pods on every node at once and checks that no
// address is held twice.
func runPods(ctx context.Context, b *testing.B, nodes []*simNode, podsN int) podRun {
	var before, writesBefore, blockWritesBefore uint64
	createsBefore, liftWritesBefore := 0, 0
	for _, n := range nodes {
		before += n.kc.Requests()
		writesBefore += n.kc.Writes()
		blockWritesBefore += n.kc.BlockWrites()
		st := n.src.Status()
		createsBefore += st.Claims + st.Conflicts
		liftWritesBefore += st.FenceLiftWrites
	}
	var waited atomic.Uint64
	start := time.Now()
	var wg sync.WaitGroup
	for _, n := range nodes {
		wg.Go(func() {
			for p := range podsN {
				id := fmt.Sprintf("%s-pod-%d", n.name, p)
				if err := n.addOnce(ctx, id); err == nil {
					continue
				}
				waited.Add(1)
				if _, err := n.add(ctx, id); err != nil {
					b.Errorf("%s: %v", id, err)
					return
				}
			}
		})
	}
	wg.Wait()
	run := podRun{took: time.Since(start), waited: waited.Load()}
	seen := map[string]bool{}
	for _, n := range nodes {
		run.requests += n.kc.Requests()
		run.writes += n.kc.Writes()
		run.blockWrites += n.kc.BlockWrites()
		st := n.src.Status()
		run.creates += st.Claims + st.Conflicts
		run.liftWrites += st.FenceLiftWrites
		for _, as := range n.store.Assignments() {
			for _, ip := range as.IPs() {
				if seen[ip.String()] {
					run.dups++
				}
				seen[ip.String()] = true
			}
		}
	}
	run.requests -= before
	run.writes -= writesBefore
	run.blockWrites -= blockWritesBefore
	run.creates -= createsBefore
	run.liftWrites -= liftWritesBefore
	return run
}

// claimRecorder collects OnClaim from every node.
type claimRecorder struct {
	mu        sync.Mutex
	took      []time.Duration
	conflicts int
	blocks    int
}

func (r *claimRecorder) add(c pool.Claim) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.took = append(r.took, c.Took)
	r.conflicts += c.Conflicts
	r.blocks += len(c.Blocks)
}

func (r *claimRecorder) report(b *testing.B, nodesN, podsN int, booted time.Duration, run podRun) {
	r.mu.Lock()
	defer r.mu.Unlock()
	slices.Sort(r.took)
	pct := func(q float64) time.Duration { return r.took[min(len(r.took)-1, int(q*float64(len(r.took))))] }
	total := nodesN * podsN
	b.Logf("%d nodes: every node held its first block %s after start", nodesN, booted.Round(time.Millisecond))
	b.Logf("%d pods (%d a node) addressed in %s; %d ADDs answered try-again-later first", total, podsN, run.took.Round(time.Millisecond), run.waited)
	b.Logf("claims %d (blocks %d), conflicts %d; claim latency p50 %s p90 %s p99 %s max %s",
		len(r.took), r.blocks, r.conflicts, pct(0.5), pct(0.9), pct(0.99), r.took[len(r.took)-1])
	b.Logf("during the ADDs: %d API requests: %d writes = %d IPBlock writes (%d creates: claims + conflicts; %d updates before fence lifts) + %d Events (Fenced: Leases lapsed under this load), %d reads (informers listing and watching again after a lost connection, and each fence lift's reads); %.2f writes per 100 pods, 0 per ADD",
		run.requests, run.writes, run.blockWrites, run.creates, run.liftWrites, run.writes-run.blockWrites, run.requests-run.writes, float64(run.writes)*100/float64(total))
	b.ReportMetric(float64(pct(0.5).Milliseconds()), "claim-p50-ms")
	b.ReportMetric(float64(pct(0.99).Milliseconds()), "claim-p99-ms")
	b.ReportMetric(float64(r.conflicts), "conflicts")
	b.ReportMetric(float64(run.requests)*100/float64(total), "requests/100pods")
	b.ReportMetric(float64(run.writes)*100/float64(total), "writes/100pods")
	b.ReportMetric(float64(run.liftWrites), "fence-lift-writes")
	if run.blockWrites != uint64(run.creates+run.liftWrites) {
		b.Errorf("%d IPBlock writes during the ADDs but %d creates and %d fence-lift updates: something else wrote IPBlocks", run.blockWrites, run.creates, run.liftWrites)
	}
}

func envInt(b *testing.B, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		b.Fatalf("%s=%q: want a positive number", name, v)
	}
	return n
}

func shmDir(b *testing.B) string {
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
		d, err := os.MkdirTemp("/dev/shm", "pool-scale-")
		if err == nil {
			b.Cleanup(func() { _ = os.RemoveAll(d) })
			return d
		}
	}
	return b.TempDir()
}

var _ = datastore.ErrPoolNotReady
