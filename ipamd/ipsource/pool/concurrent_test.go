package pool_test

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sandboxipam/sandboxipam/internal/clusterfixture"
	"github.com/sandboxipam/sandboxipam/internal/testsupport"
	"github.com/sandboxipam/sandboxipam/ipamd/datastore"
	"github.com/sandboxipam/sandboxipam/ipamd/ipsource/pool/poolconf"
)

// Four nodes start at once against one real kube-apiserver and a
// dual-stack IPPool of exactly four blocks per family: each wins exactly
// one block of each family (the create-if-absent claim), no two blocks
// overlap, every node's datastore holds exactly the blocks the API server
// records for its name and UID, and no address goes to two pods anywhere.
// When a node's block runs low, its claim finds the pool full (3
// AlreadyExists a family, its only API writes across 6 ADDs; reads are
// not counted: an informer whose watch the loaded API server closed lists
// again), and the ADD that finds no address is answered ErrPoolNotReady
// (CNI code 11) naming the wait.
func TestPoolNodesClaimConcurrently(t *testing.T) {
	a, admin := clusterfixture.StartCounted(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	if err := clusterfixture.CreatePool(ctx, admin.Dynamic, "default", 29, 125, "198.18.16.0/27", "fd00:16::/123"); err != nil {
		t.Fatal(err)
	}
	cfg := poolconf.DefaultConfig()
	cfg.LowWatermark, cfg.HighWatermark, cfg.Interval, cfg.ReturnGrace = 2, 8, 20*time.Millisecond, time.Hour
	dir := t.TempDir()
	nodes := make([]*simNode, 4)
	var wg sync.WaitGroup
	for i := range nodes {
		wg.Go(func() { nodes[i] = startSim(ctx, t, a, admin, dir, fmt.Sprintf("node-c%d", i), "", cfg, nil) })
	}
	wg.Wait()
	for _, n := range nodes {
		// And its fence lifted: the lift writes each block (issue 44),
		// once, at start; the count below is of the ADDs alone.
		testsupport.Wait(t, n.name+" to hold one block of each family, unfenced", func() (bool, string) {
			return len(n.poolBlocks()) == 2 && n.src.Status().Fenced == "", join(n.poolBlocks()) + " " + n.src.Status().Fenced
		})
	}
	checkBlocks(t, ctx, nodes)

	// Six pods on every node at once.
	before := make([]uint64, len(nodes))
	for i, n := range nodes {
		before[i] = n.kc.Writes()
	}
	got := make([][]datastore.Assignment, len(nodes))
	for i, n := range nodes {
		wg.Go(func() {
			for p := range 6 {
				as, err := n.add(ctx, fmt.Sprintf("%s-pod-%d", n.name, p))
				if err != nil {
					t.Errorf("%s ADD %d: %v", n.name, p, err)
					return
				}
				got[i] = append(got[i], as)
			}
		})
	}
	wg.Wait()
	checkAddresses(t, nodes, got)

	const want = "waiting for a new block of IPPool default: claim an ipv4 block: no free block of IPPool default after 3 tries: every block tried is claimed"
	for i, n := range nodes {
		testsupport.Wait(t, n.name+"'s seventh ADD to name the full pool", func() (bool, string) {
			n.waitPass(ctx)
			err := n.addOnce(ctx, n.name+"-pod-7")
			return errors.Is(err, datastore.ErrPoolNotReady) && strings.Contains(err.Error(), want), fmt.Sprint(err)
		})
		st := n.src.Status()
		// 3 AlreadyExists per family: a /125 block hands out 7 addresses
		// (not its first, the subnet-router anycast), so six pods leave
		// the IPv6 side below the low watermark as well as the IPv4 one.
		if w := n.kc.Writes() - before[i]; w != 6 || st.Claims != 2 || st.Conflicts < 6 {
			t.Errorf("%s: %d API writes across its ADDs, want 6 (the full pool's AlreadyExists, both families); status %+v", n.name, w, st)
		}
	}
}

// checkBlocks compares every node's datastore with the API server's
// IPBlocks: the same blocks, the node's name and UID, no overlap.
func checkBlocks(t *testing.T, ctx context.Context, nodes []*simNode) {
	t.Helper()
	bs, err := clusterfixture.Blocks(ctx, nodes[0].kc.Dynamic)
	if err != nil {
		t.Fatal(err)
	}
	if len(bs) != 8 {
		t.Fatalf("%d IPBlocks, want 8 (4 nodes x 2 families)", len(bs))
	}
	var all []netip.Prefix
	for _, n := range nodes {
		var inAPI []string
		for cidr, b := range bs {
			if b.Spec.NodeName == n.name {
				if b.Spec.NodeUID != n.uid {
					t.Errorf("IPBlock %s of %s carries UID %s, want %s", cidr, n.name, b.Spec.NodeUID, n.uid)
				}
				inAPI = append(inAPI, cidr)
			}
		}
		slices.Sort(inAPI)
		if mine := n.poolBlocks(); !slices.Equal(mine, inAPI) {
			t.Errorf("%s holds %v, the API server records %v", n.name, mine, inAPI)
		}
		for _, c := range inAPI {
			all = append(all, netip.MustParsePrefix(c))
		}
	}
	for i, p := range all {
		for _, q := range all[i+1:] {
			if p.Overlaps(q) {
				t.Errorf("blocks %s and %s overlap", p, q)
			}
		}
	}
}

// checkAddresses: every address lies in its own node's blocks and no
// address is held twice in the cluster.
func checkAddresses(t *testing.T, nodes []*simNode, got [][]datastore.Assignment) {
	t.Helper()
	seen := map[netip.Addr]string{}
	for i, n := range nodes {
		if len(got[i]) != 6 {
			t.Fatalf("%s got %d pods addressed, want 6", n.name, len(got[i]))
		}
		blocks := n.poolBlocks()
		for _, as := range got[i] {
			if len(as.IPs()) != 2 {
				t.Errorf("%s %s got %v, want one address per family", n.name, as.SandboxID, as.IPs())
			}
			for _, ip := range as.IPs() {
				if !slices.ContainsFunc(blocks, func(b string) bool { return netip.MustParsePrefix(b).Contains(ip) }) {
					t.Errorf("%s %s got %s outside its blocks %v", n.name, as.SandboxID, ip, blocks)
				}
				if other, dup := seen[ip]; dup {
					t.Errorf("%s held by %s and %s", ip, other, as.SandboxID)
				}
				seen[ip] = as.SandboxID
			}
		}
	}
	if len(seen) != 48 {
		t.Errorf("%d distinct addresses, want 48", len(seen))
	}
}
