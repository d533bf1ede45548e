package pool_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/netip"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/sandboxipam/sandboxipam/cluster/api/ipamdlease"
	"github.com/sandboxipam/sandboxipam/cluster/api/v1alpha1"
	"github.com/sandboxipam/sandboxipam/cluster/reclaim"
	"github.com/sandboxipam/sandboxipam/internal/clusterfixture"
	"github.com/sandboxipam/sandboxipam/internal/testsupport"
	"github.com/sandboxipam/sandboxipam/ipamd/datastore"
	"github.com/sandboxipam/sandboxipam/ipamd/ipsource/pool"
	"github.com/sandboxipam/sandboxipam/ipamd/ipsource/pool/poolconf"
)

// Issue 44, path 4, on a real API server with the real pool source, its
// Lease and fence, and the real reclaimer: ipamd is cut off from its
// Lease and fences; the reclaimer judges the block on ipamd's stale Lease
// (its Node gone, an operator's confirmation on the block) and its delete
// is held between the judgement and the call. Meanwhile the cut heals:
// ipamd renews, lifts its fence and hands out an address of the block.
// Lifting wrote the block first, so the held delete, carrying the
// resourceVersion judged, fails with a Conflict: the block stays this
// node's (another node's claim of it is AlreadyExists) and every address
// of it is held once.
func TestFenceLiftOrdersAReclaimJudgedBefore(t *testing.T) {
	env := clusterfixture.Start(t, t.TempDir())
	t.Cleanup(env.API.Stop)
	env.InstallPoolCRDs(t)
	env.Pool(t, "default", 26, "198.18.46.0/24")
	const node = "lift-n1"
	n := env.Node(t, node)
	t0 := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	lclk, rclk := clocktesting.NewFakeClock(t0), clocktesting.NewFakeClock(t0)
	var cut atomic.Bool
	leaseKube := cutClient(t, env.Config, &cut)
	store, err := datastore.Open(t.Context(), datastore.Options{Path: filepath.Join(t.TempDir(), node+".ckpt"), Cooldown: time.Millisecond,
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close() })
	cfg := poolconf.DefaultConfig()
	cfg.LowWatermark, cfg.HighWatermark, cfg.Interval, cfg.ReturnGrace = 2, 8, 20*time.Millisecond, time.Hour
	src, err := pool.New(cfg, node, env.Client, env.Dynamic, store, pool.Options{LeaseKube: leaseKube, LeaseClock: lclk, Logger: slog.New(slog.NewTextHandler(testWriter{t}, nil))})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := src.Restore(t.Context()); err != nil {
		t.Fatal(err)
	}
	sim := &simNode{name: node, store: store, src: src, stopped: make(chan struct{})}
	go func() { defer close(sim.stopped); _ = src.Run(t.Context()) }()
	t.Cleanup(func() { <-sim.stopped })
	testsupport.Wait(t, "a block claimed and the fence lifted", func() (bool, string) {
		st := src.Status()
		return len(st.Blocks) == 1 && st.Fenced == "", fmt.Sprintf("%+v", st)
	})
	block := netip.MustParsePrefix(src.Status().Blocks[0])
	name := v1alpha1.BlockName(block)
	first, err := sim.add(t.Context(), "sandbox-0")
	if err != nil {
		t.Fatal(err)
	}

	// The node is cut off from its Lease; its Node deleted; an operator
	// confirms it gone. ipamd fences 2m10s on (its clock).
	blocks := env.Dynamic.Resource(v1alpha1.IPBlockResource)
	u, err := blocks.Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Every annotation replaced: the lift's count starts again, at 1.
	u.SetAnnotations(map[string]string{ipamdlease.ConfirmNodeGoneAnnotation: string(n.UID)})
	if _, err := blocks.Update(t.Context(), u, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	env.DeleteNode(t, node)
	cut.Store(true)
	for src.Status().Fenced == "" {
		if lclk.Since(t0) > 3*time.Minute {
			t.Fatalf("not fenced %s after the cut", lclk.Since(t0))
		}
		testsupport.Wait(t, "ipamd's renewer to wait on its clock", func() (bool, string) { return lclk.HasWaiters(), "" })
		lclk.Step(10 * time.Second)
		if lclk.Since(t0) >= 130*time.Second {
			testsupport.Wait(t, "the fence", func() (bool, string) { st := src.Status(); return st.Fenced != "", fmt.Sprint(st) })
		}
	}

	// The reclaimer judges the block past its wait and is held right
	// before its delete.
	reached, release := make(chan struct{}), make(chan struct{})
	logs := &testsupport.Buffer{}
	cfgR := reclaim.DefaultConfig()
	cfgR.Grace = time.Minute
	r, err := reclaim.New(reclaim.Clients{Kube: env.Client, Dynamic: env.Dynamic}, reclaim.Options{Config: cfgR, Identity: "reclaimer-lift", Clock: rclk,
		Logger: slog.New(slog.NewTextHandler(logs, nil)),
		BeforeDelete: func(_ context.Context, b string) {
			if b == name {
				close(reached)
				<-release
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	testsupport.Wait(t, "the reclaimer to judge "+name, func() (bool, string) {
		v, ok := r.RunOnce(t.Context()).Verdict(name)
		return ok && strings.HasPrefix(v.Keep, "Lease kube-node-lease/"+node+" absent"), fmt.Sprintf("%+v", v)
	})
	rclk.Step(5*time.Minute + time.Second)
	done := make(chan reclaim.Pass)
	go func() { done <- r.RunOnce(t.Context()) }()
	select {
	case <-reached:
	case p := <-done:
		t.Fatalf("the reclaimer did not try to delete %s: %+v", name, p)
	}

	// The cut heals: ipamd renews, lifts its fence, hands out an address.
	cut.Store(false)
	testsupport.Wait(t, "ipamd's renewer to wait on its clock", func() (bool, string) { return lclk.HasWaiters(), "" })
	lclk.Step(10 * time.Second)
	testsupport.Wait(t, "the fence lifted", func() (bool, string) { st := src.Status(); return st.Fenced == "", fmt.Sprintf("%+v", st) })
	second, err := sim.addOnceGet(t.Context(), "sandbox-1")
	if err != nil || !block.Contains(second.IPs()[0]) || second.IPs()[0] == first.IPs()[0] {
		t.Fatalf("ADD after the lift: %v %v", second, err)
	}

	// The held delete lands, and fails.
	close(release)
	p := <-done
	if len(p.Reclaimed) != 0 || len(p.Errors) != 0 {
		t.Fatalf("the delete judged before the lift: %+v", p)
	}
	if !strings.Contains(logs.String(), "block changed or gone since it was judged") {
		t.Errorf("no log of the delete's conflict:\n%s", logs.String())
	}
	got, err := blocks.Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the block after the held delete: %v", err)
	}
	if b, err := v1alpha1.BlockFrom(got); err != nil || b.Spec.NodeName != node || b.Spec.NodeUID != string(n.UID) ||
		got.GetAnnotations()[ipamdlease.FenceLiftAnnotation] != "1" {
		t.Fatalf("the block after the held delete: %+v (%v)", got, err)
	}
	other := v1alpha1.NewBlock("default", block, "node-other", "uid-other", metav1.NewTime(t0))
	if err := createBlock(t.Context(), blocks, other); !apierrors.IsAlreadyExists(err) {
		t.Fatalf("another node claiming %s: %v, want AlreadyExists", name, err)
	}
	if st := src.Status(); len(st.Foreign) != 0 || len(st.Blocks) != 1 || st.Blocks[0] != block.String() {
		t.Fatalf("ipamd after the held delete: %+v", st)
	}
}

// cutClient is a client of the API server that fails every request while
// cut is set, as a partitioned node's does.
func cutClient(t *testing.T, cfg *rest.Config, cut *atomic.Bool) kubernetes.Interface {
	t.Helper()
	c := rest.CopyConfig(cfg)
	c.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			if cut.Load() {
				return nil, errors.New("cut off from the API server")
			}
			return rt.RoundTrip(r)
		})
	}
	kc, err := kubernetes.NewForConfig(c)
	if err != nil {
		t.Fatal(err)
	}
	return kc
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// addOnceGet ADDs one pod without retrying and returns its assignment.
func (n *simNode) addOnceGet(ctx context.Context, id string) (datastore.Assignment, error) {
	key := datastore.Key{Network: "simnet", SandboxID: id, IfName: "eth0"}
	return n.store.Assign(ctx, key, datastore.Pod{Name: id, Namespace: "default", UID: "uid-" + id})
}

// testWriter logs the pool source's lines through t.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) { w.t.Log(string(p)); return len(p), nil }
