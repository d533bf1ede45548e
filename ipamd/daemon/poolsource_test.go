package daemon_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/sandboxipam/sandboxipam/cluster/api/v1alpha1"
	"github.com/sandboxipam/sandboxipam/internal/clusterfixture"
	"github.com/sandboxipam/sandboxipam/internal/kubeenv"
	"github.com/sandboxipam/sandboxipam/internal/testsupport"
	"github.com/sandboxipam/sandboxipam/ipamd/api/apierr"
	"github.com/sandboxipam/sandboxipam/ipamd/api/wire"
	"github.com/sandboxipam/sandboxipam/ipamd/config"
	"github.com/sandboxipam/sandboxipam/ipamd/daemon"
	"github.com/sandboxipam/sandboxipam/ipamd/introspect/client"
	"github.com/sandboxipam/sandboxipam/ipamd/kubeclient"
)

// fakeClock is the pool source's clock of its return grace: the test
// moves it, so no test waits out a grace.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// poolEnv is a real API server with the project's CRDs, an IPPool and
// this node's Node.
type poolEnv struct {
	api  *kubeenv.APIServer
	kube *kubeclient.Client // the test's own client
	uid  string
}

func startPoolEnv(t *testing.T, nodeName string, cidrs ...string) *poolEnv {
	t.Helper()
	a, _ := startAPIServer(t)
	rc, err := clientcmd.BuildConfigFromFlags("", a.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	kc, err := kubeclient.FromConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	if err := clusterfixture.InstallCRDs(t.Context(), kc.Dynamic, testsupport.Root(t)); err != nil {
		t.Fatal(err)
	}
	if err := clusterfixture.CreatePool(t.Context(), kc.Dynamic, "default", 29, 125, cidrs...); err != nil {
		t.Fatal(err)
	}
	uid, err := clusterfixture.CreateNode(t.Context(), kc, nodeName)
	if err != nil {
		t.Fatal(err)
	}
	return &poolEnv{api: a, kube: kc, uid: uid}
}

// poolNode is a node whose ipamd claims blocks of IPPool default: low
// watermark 2, high 8, grace 1m (on the test's clock), a pass every 20ms.
func poolNode(t *testing.T, e *poolEnv, name string) *node {
	t.Helper()
	n := newNode(t, "198.18.0.0/28")
	n.cfg.IPSource.Type = config.SourcePool
	n.cfg.IPSource.NodeName = name
	n.cfg.IPSource.Pool.LowWatermark = 2
	n.cfg.IPSource.Pool.HighWatermark = 8
	n.cfg.IPSource.Pool.ReturnGrace = time.Minute
	n.cfg.IPSource.Pool.Interval = 20 * time.Millisecond
	n.cfg.IPSource.Pool.Kubeconfig = e.api.Kubeconfig
	if err := n.cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	return n
}

// startPoolDaemon runs ipamd in process with its own counted client.
func startPoolDaemon(t *testing.T, e *poolEnv, n *node, clock *fakeClock) (*daemon.Daemon, *kubeclient.Client, cniClient, *client.Client) {
	t.Helper()
	rc, err := clientcmd.BuildConfigFromFlags("", e.api.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	kc, err := kubeclient.FromConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	logger := slog.New(slog.NewTextHandler(testLogWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	// ipamd's Lease clock stands still: one renew at start, and neither
	// renews nor a fence after, so the requests the tests count are the
	// pool's (TestPoolSourceFencesWhenCutOff steps one).
	d := daemon.New(n.cfg, daemon.Options{Logger: logger, Kube: kc, PoolNow: clock.Now, PoolLeaseClock: clocktesting.NewFakeClock(clock.Now())})
	if err := d.Start(t.Context()); err != nil {
		t.Fatalf("Start: %v", err)
	}
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			_ = d.Stop(context.Background())
		}
	})
	return d, kc, cniClient{socket: n.cfg.Socket}, client.NewAdmin(n.cfg.AdminSocketPath())
}

// apiBlocks renders the API server's IPBlocks as "cidr@node" sorted.
func apiBlocks(t *testing.T, e *poolEnv) []string {
	t.Helper()
	bs, err := clusterfixture.Blocks(t.Context(), e.kube.Dynamic)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for cidr, b := range bs {
		if b.Spec.NodeUID != e.uid {
			t.Errorf("IPBlock %s carries node UID %s, want %s", cidr, b.Spec.NodeUID, e.uid)
		}
		out = append(out, cidr+"@"+b.Spec.NodeName)
	}
	slices.Sort(out)
	return out
}

// blocksOf lists the pool's current (not retiring) ranges from GET /v1/pool.
func blocksOf(t *testing.T, c *client.Client) []string {
	t.Helper()
	got, _ := poolRanges(t, c)
	if got == "" {
		return nil
	}
	return strings.Split(got, ",")
}

func waitBlocks(t *testing.T, c *client.Client, n int) []string {
	t.Helper()
	var got []string
	testsupport.Wait(t, fmt.Sprintf("the pool to hold %d blocks", n), func() (bool, string) {
		got = blocksOf(t, c)
		return len(got) == n, strings.Join(got, ",")
	})
	return got
}

// hosts are the usable addresses of an IPv4 block under the static rules.
func hosts(block string) []string {
	p := netip.MustParsePrefix(block)
	var out []string
	for a := p.Addr().Next(); p.Contains(a.Next()); a = a.Next() {
		out = append(out, a.String()+"/"+fmt.Sprint(p.Bits()))
	}
	return out
}

// The pool source against a real kube-apiserver: nothing is handed out
// before a first block is claimed (ADD: try again later naming the wait);
// a block is claimed as the free addresses fall below the low watermark,
// not on an ADD (0 API requests across ADDs that cross no watermark; the
// requests across the whole growth are exactly the creates); every
// address lies in a block the API server records for this node's UID; an
// empty block is returned once the grace passes on the source's clock and
// the node is above the high watermark, its IPBlock deleted.
func TestPoolSourceGrowsAndReturns(t *testing.T) {
	const name = "node-p1"
	e := startPoolEnv(t, name, "198.18.8.0/27")
	n := poolNode(t, e, name)
	clock := &fakeClock{now: time.Date(2026, 12, 3, 18, 0, 0, 0, time.UTC)}
	d, kc, cni, intro := startPoolDaemon(t, e, n, clock)

	testsupport.Wait(t, "the first runtime listing to prove the new store", func() (bool, string) {
		return !d.Store().Unproven(), readyWhy(t, intro)
	})
	first := waitBlocks(t, intro, 1)
	if got, want := apiBlocks(t, e), []string{first[0] + "@" + name}; !slices.Equal(got, want) {
		t.Fatalf("IPBlocks %v, want %v", got, want)
	}
	waitReady(t, cni)
	// 6 usable addresses, low watermark 2: ADDs 1-4 leave 2 free, so no
	// claim and no request at all.
	before := kc.Requests()
	want := hosts(first[0])
	for i := range 4 {
		id := fmt.Sprintf("sandbox-%d", i)
		n.addSandbox(id)
		if got := mustAddIPs(t, cni, id); !slices.Equal(got, want[i:i+1]) {
			t.Fatalf("ADD %d got %v, want %v", i, got, want[i:i+1])
		}
	}
	fullPass(d)
	if got := kc.Requests() - before; got != 0 {
		t.Fatalf("4 ADDs above the low watermark made %d API requests, want 0", got)
	}
	// The fifth leaves 1 free: below the watermark, one block is claimed.
	n.addSandbox("sandbox-4")
	if got := mustAddIPs(t, cni, "sandbox-4"); !slices.Equal(got, want[4:5]) {
		t.Fatalf("ADD 4 got %v, want %v", got, want[4:5])
	}
	blocks := waitBlocks(t, intro, 2)
	second := blocks[0]
	if second == first[0] {
		second = blocks[1]
	}
	if st, got := d.PoolSource().Status(), kc.Requests()-before; got != 1 || st.Claims != 2 || st.Conflicts != 0 {
		t.Fatalf("5 ADDs made %d API requests, want 1 (the claim's create; claims %d, conflicts %d)", got, st.Claims, st.Conflicts)
	}
	if got, want := apiBlocks(t, e), sortedPair(first[0]+"@"+name, second+"@"+name); !slices.Equal(got, want) {
		t.Fatalf("IPBlocks %v, want %v", got, want)
	}
	rec, _ := d.Store().NodeRecord()
	if rec.UID != e.uid || len(rec.PodCIDRs) != 2 {
		t.Fatalf("checkpoint record %+v, want both blocks under UID %s", rec, e.uid)
	}
	// Sixth and seventh: the first block's last address, then the second's.
	n.addSandbox("sandbox-5")
	if got := mustAddIPs(t, cni, "sandbox-5"); !slices.Equal(got, want[5:6]) {
		t.Fatalf("ADD 5 got %v, want %v", got, want[5:6])
	}
	n.addSandbox("sandbox-6")
	if got, w := mustAddIPs(t, cni, "sandbox-6"), hosts(second)[:1]; !slices.Equal(got, w) {
		t.Fatalf("ADD 6 got %v, want %v (the claimed block)", got, w)
	}

	// All DEL: 12 free > high 8, and 6 >= low 2 without a block: past the
	// grace, one block (the lower) goes; then 6 <= 8 keeps the other.
	for i := range 7 {
		mustDel(t, cni, n, fmt.Sprintf("sandbox-%d", i))
	}
	fullPass(d)
	fullPass(d)
	if got := blocksOf(t, intro); len(got) != 2 {
		t.Fatalf("before the grace the pool holds %v, want both blocks", got)
	}
	clock.Advance(2 * time.Minute)
	kept := waitBlocks(t, intro, 1)
	lower, upper := first[0], second
	if netip.MustParsePrefix(upper).Addr().Less(netip.MustParsePrefix(lower).Addr()) {
		lower, upper = upper, lower
	}
	if kept[0] != upper {
		t.Fatalf("kept %v, want %s (the lower block %s returns first)", kept, upper, lower)
	}
	testsupport.Wait(t, "the returned block's IPBlock to be deleted", func() (bool, string) {
		got := apiBlocks(t, e)
		return slices.Equal(got, []string{upper + "@" + name}), strings.Join(got, ",")
	})
	clock.Advance(10 * time.Minute)
	fullPass(d)
	if got := blocksOf(t, intro); !slices.Equal(got, []string{upper}) {
		t.Fatalf("at the high watermark the pool holds %v, want only %s", got, upper)
	}
	if st := d.PoolSource().Status(); st.Returns != 1 {
		t.Fatalf("returns = %d, want 1", st.Returns)
	}
	m := scrape(t, d.MetricsAddr().String())
	for _, line := range []string{"ipamd_pool_claims_total 2", "ipamd_pool_returns_total 1", "ipamd_pool_blocks 1",
		"ipamd_pool_claim_conflicts_total 0", "ipamd_pool_growth_waiting 0"} {
		if !strings.Contains(m, line+"\n") {
			t.Errorf("/metrics lacks %q", line)
		}
	}
}

func sortedPair(a, b string) []string {
	out := []string{a, b}
	slices.Sort(out)
	return out
}

// provenPool is one node's ipamd on the pool source, its store proven,
// its first block claimed and ADD served.
type provenPool struct {
	e     *poolEnv
	n     *node
	clock *fakeClock
	d     *daemon.Daemon
	cni   cniClient
	intro *client.Client
	first string // the first block claimed
}

func startProvenPool(t *testing.T, name string) provenPool {
	t.Helper()
	e := startPoolEnv(t, name, "198.18.8.0/27")
	n := poolNode(t, e, name)
	clock := &fakeClock{now: time.Date(2026, 12, 3, 18, 0, 0, 0, time.UTC)}
	d, _, cni, intro := startPoolDaemon(t, e, n, clock)
	testsupport.Wait(t, "the store to be proven", func() (bool, string) { return !d.Store().Unproven(), readyWhy(t, intro) })
	first := waitBlocks(t, intro, 1)[0]
	waitReady(t, cni)
	return provenPool{e: e, n: n, clock: clock, d: d, cni: cni, intro: intro, first: first}
}

// addFirstTwo ADDs sandbox-0 and sandbox-1, which get the first two
// addresses of the first block.
func (p provenPool) addFirstTwo(t *testing.T) {
	t.Helper()
	for i, id := range []string{"sandbox-0", "sandbox-1"} {
		p.n.addSandbox(id)
		if got, want := mustAddIPs(t, p.cni, id), hosts(p.first)[i:i+1]; !slices.Equal(got, want) {
			t.Fatalf("ADD %s got %v, want %v", id, got, want)
		}
	}
}

// fullPass waits until a pass of the pool source started and ended after
// the call: the one in progress may have started before.
func fullPass(d *daemon.Daemon) {
	c := d.PoolSource().Passes()
	select {
	case <-c:
	default:
	}
	<-c
	<-c
}

// cniCode is the CNI error code the plugin would print for err.
func cniCode(err error) (uint, string) {
	var we *wire.Error
	if !errors.As(err, &we) {
		return 0, ""
	}
	code, _ := apierr.CNI(wire.MethodAdd, we.Code)
	return code, we.Message
}

// The API server stopped: ADD and DEL go on inside the claimed block,
// no claim is possible, and an ADD that finds the block full is answered
// "try again later" (CNI code 11) naming the wait for a new block. A
// restart with the API server still down serves DELs from the checkpoint,
// and answers ADD code 11, fenced until its Lease is renewed.
func TestPoolSourceAPIServerDown(t *testing.T) {
	p := startProvenPool(t, "node-p2")
	e, n, clock, d, cni, intro, block := p.e, p.n, p.clock, p.d, p.cni, p.intro, p.first
	ctx := t.Context()
	want := hosts(block)
	for i := range 4 {
		id := fmt.Sprintf("sandbox-%d", i)
		n.addSandbox(id)
		if got := mustAddIPs(t, cni, id); !slices.Equal(got, want[i:i+1]) {
			t.Fatalf("ADD %d got %v, want %v", i, got, want[i:i+1])
		}
	}
	e.api.Stop()
	for i := 4; i < 6; i++ {
		id := fmt.Sprintf("sandbox-%d", i)
		n.addSandbox(id)
		if got := mustAddIPs(t, cni, id); !slices.Equal(got, want[i:i+1]) {
			t.Fatalf("ADD %d with the API server down got %v, want %v", i, got, want[i:i+1])
		}
	}
	n.addSandbox("sandbox-6")
	const wantMsg = "waiting for a new block of IPPool default: claim an ipv4 block: create IPBlock"
	testsupport.Wait(t, "ADD on a full block to answer code 11 naming the failed claim", func() (bool, string) {
		_, err := cni.add(ctx, "sandbox-6")
		code, msg := cniCode(err)
		return code == apierr.CNITryAgainLater && strings.Contains(msg, wantMsg), fmt.Sprint(err)
	})
	if got := blocksOf(t, intro); !slices.Equal(got, []string{block}) {
		t.Fatalf("pool %v with the API server down, want only %s", got, block)
	}
	if released, err := cni.del(ctx, "sandbox-0"); err != nil || !released {
		t.Fatalf("DEL with the API server down = %v, %v", released, err)
	}
	n.removeSandbox("sandbox-0")
	testsupport.Wait(t, "ADD to reuse the released address past its cooldown", func() (bool, string) {
		got, err := cni.addAll(ctx, "sandbox-6")
		return err == nil && slices.Equal(got, want[:1]), fmt.Sprint(got, err)
	})

	// Restart, the API server still down: the checkpoint has the block.
	if err := d.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	d2, _, cni2, intro2 := startPoolDaemon(t, e, n, clock)
	if got := blocksOf(t, intro2); !slices.Equal(got, []string{block}) {
		t.Fatalf("pool after a restart with the API server down = %v, want %s from the checkpoint", got, block)
	}
	testsupport.Wait(t, "the store to be proven", func() (bool, string) { return !d2.Store().Unproven(), readyWhy(t, intro2) })
	if released, err := cni2.del(ctx, "sandbox-1"); err != nil || !released {
		t.Fatalf("DEL after the restart = %v, %v", released, err)
	}
	n.removeSandbox("sandbox-1")
	// ADD is fenced: nothing says how long this ipamd was away, and its
	// blocks may have been reclaimed meanwhile (package lease).
	n.addSandbox("sandbox-7")
	_, err := cni2.add(ctx, "sandbox-7")
	if code, msg := cniCode(err); code != apierr.CNITryAgainLater ||
		!strings.Contains(msg, "ipamd is fenced: no new address of its claimed blocks: this ipamd has not yet renewed its Lease kube-system/sandboxipam-ipamd-node-p2") {
		t.Fatalf("ADD after a restart with the API server down: code %d %q", code, msg)
	}
}

// ipamd stopped between an IPBlock's create and the record of its claim
// leaves a block in the API server that its checkpoint lacks; the next
// start adopts it (it carries this Node's UID) and hands out its
// addresses, so nothing leaks. Another node's block is left alone.
func TestPoolSourceAdoptsAnUnrecordedClaim(t *testing.T) {
	const name = "node-p3"
	e := startPoolEnv(t, name, "198.18.8.0/27")
	ctx := t.Context()
	otherUID, err := clusterfixture.CreateNode(ctx, e.kube, "node-other")
	if err != nil {
		t.Fatal(err)
	}
	at := metav1.NewTime(time.Date(2026, 12, 3, 17, 0, 0, 0, time.UTC))
	for _, b := range []v1alpha1.IPBlock{
		v1alpha1.NewBlock("default", netip.MustParsePrefix("198.18.8.16/29"), name, e.uid, at),
		v1alpha1.NewBlock("default", netip.MustParsePrefix("198.18.8.0/29"), "node-other", otherUID, at),
	} {
		u, err := v1alpha1.ToUnstructured(&b)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.kube.Dynamic.Resource(v1alpha1.IPBlockResource).Create(ctx, u, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	n := poolNode(t, e, name)
	clock := &fakeClock{now: time.Date(2026, 12, 3, 18, 0, 0, 0, time.UTC)}
	d, _, cni, intro := startPoolDaemon(t, e, n, clock)
	testsupport.Wait(t, "the store to be proven", func() (bool, string) { return !d.Store().Unproven(), readyWhy(t, intro) })
	if got := waitBlocks(t, intro, 1); !slices.Equal(got, []string{"198.18.8.16/29"}) {
		t.Fatalf("pool %v, want the adopted 198.18.8.16/29", got)
	}
	fullPass(d)
	if st := d.PoolSource().Status(); st.Adopted != 1 || st.Claims != 0 {
		t.Fatalf("status %+v, want 1 adopted and no claim (6 free >= low watermark 2)", st)
	}
	bs, err := clusterfixture.Blocks(ctx, e.kube.Dynamic)
	if err != nil {
		t.Fatal(err)
	}
	if len(bs) != 2 || bs["198.18.8.0/29"].Spec.NodeUID != otherUID || bs["198.18.8.16/29"].Spec.NodeUID != e.uid {
		t.Fatalf("IPBlocks after adoption: %+v", bs)
	}
	rec, _ := d.Store().NodeRecord()
	if len(rec.PodCIDRs) != 1 || rec.PodCIDRs[0].String() != "198.18.8.16/29" || rec.UID != e.uid {
		t.Fatalf("checkpoint record %+v, want the adopted block under UID %s", rec, e.uid)
	}
	waitReady(t, cni)
	n.addSandbox("sandbox-a")
	if got := mustAddIPs(t, cni, "sandbox-a"); !slices.Equal(got, []string{"198.18.8.17/29"}) {
		t.Fatalf("ADD got %v, want 198.18.8.17/29 from the adopted block", got)
	}
}

// A Node deleted and registered again (same name, new UID) while ipamd
// runs: the blocks claimed under the old UID retire at once (nothing more
// is handed out of them, though addresses stay free there) while their
// pods keep their addresses; a block is claimed under the new UID and
// serves the next ADD; the retiring block survives a restart; once its
// last holder's DEL comes it leaves the pool and ipamd deletes its
// IPBlock itself (the reclaimer would not: the node's Lease is renewed).
func TestPoolSourceNodeRegisteredAgain(t *testing.T) {
	const name = "node-p4"
	p := startProvenPool(t, name)
	e, n, clock, d, cni, intro, old := p.e, p.n, p.clock, p.d, p.cni, p.intro, p.first
	ctx := t.Context()
	p.addFirstTwo(t)

	oldUID := e.uid
	if err := e.kube.CoreV1().Nodes().Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	uid, err := clusterfixture.CreateNode(ctx, e.kube, name)
	if err != nil {
		t.Fatal(err)
	}
	if uid == oldUID {
		t.Fatalf("the Node registered again kept its UID %s", uid)
	}
	fresh := waitRetiredAndNew(t, intro, old)
	testsupport.Wait(t, "the block claimed under the new UID", func() (bool, string) {
		rec, _ := d.Store().NodeRecord()
		return rec.UID == uid && slices.Equal(rec.PodCIDRs, []netip.Prefix{netip.MustParsePrefix(fresh)}), fmt.Sprintf("record %+v", rec)
	})
	bs, err := clusterfixture.Blocks(ctx, e.kube.Dynamic)
	if err != nil {
		t.Fatal(err)
	}
	if len(bs) != 2 || bs[old].Spec.NodeUID != oldUID || bs[fresh].Spec.NodeUID != uid {
		t.Fatalf("IPBlocks %+v, want %s under the old UID %s and %s under the new %s", bs, old, oldUID, fresh, uid)
	}
	n.addSandbox("sandbox-2")
	if got, want := mustAddIPs(t, cni, "sandbox-2"), hosts(fresh)[:1]; !slices.Equal(got, want) {
		t.Fatalf("ADD after the Node registered again got %v, want %v (never the retiring %s)", got, want, old)
	}

	// A restart keeps the retiring block retiring, from the checkpoint.
	if err := d.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	d, _, cni, intro = startPoolDaemon(t, e, n, clock)
	testsupport.Wait(t, "the store to be proven", func() (bool, string) { return !d.Store().Unproven(), readyWhy(t, intro) })
	waitPoolSet(t, intro, old+" retiring", fresh)
	waitUnfenced(t, d)
	n.addSandbox("sandbox-3")
	if got, want := mustAddIPs(t, cni, "sandbox-3"), hosts(fresh)[1:2]; !slices.Equal(got, want) {
		t.Fatalf("ADD after the restart got %v, want %v", got, want)
	}

	// The old block's pods go: it leaves the pool, its IPBlock is deleted.
	mustDel(t, cni, n, "sandbox-0", "sandbox-1")
	waitPoolSet(t, intro, fresh)
	testsupport.Wait(t, "the retired block's IPBlock to be deleted by ipamd", func() (bool, string) {
		bs, err := clusterfixture.Blocks(ctx, e.kube.Dynamic)
		return err == nil && len(bs) == 1 && bs[fresh].Spec.NodeUID == uid, fmt.Sprint(bs, err)
	})
}

// poolSet is GET /v1/pool's ranges ("cidr" or "cidr retiring"), sorted.
func poolSet(t *testing.T, c *client.Client) []string {
	t.Helper()
	got, _ := poolRanges(t, c)
	if got == "" {
		return nil
	}
	out := strings.Split(got, ",")
	slices.Sort(out)
	return out
}

// waitPoolSet waits until the pool's ranges are exactly want, in any order.
func waitPoolSet(t *testing.T, c *client.Client, want ...string) {
	t.Helper()
	slices.Sort(want)
	testsupport.Wait(t, fmt.Sprintf("the pool's ranges to be %v", want), func() (bool, string) {
		got := poolSet(t, c)
		return slices.Equal(got, want), fmt.Sprint(got)
	})
}

// waitUnfenced waits until a restarted ipamd has renewed its Lease and
// read its blocks again: until then it hands out nothing new (issue 37).
func waitUnfenced(t *testing.T, d *daemon.Daemon) {
	t.Helper()
	testsupport.Wait(t, "ipamd to renew its Lease and lift its fence", func() (bool, string) {
		st := d.PoolSource().Status()
		return st.Fenced == "", st.Fenced
	})
}
