package reclaim_test

import (
	"fmt"
	"log/slog"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sandboxipam/sandboxipam/cluster/api/v1alpha1"
	"github.com/sandboxipam/sandboxipam/cluster/reclaim"
	"github.com/sandboxipam/sandboxipam/internal/clusterfixture"
	"github.com/sandboxipam/sandboxipam/internal/testsupport"
)

// One API server serves every test of the package; each test names its
// own objects.
var shared struct {
	once sync.Once
	dir  string
	env  *clusterfixture.Env
}

func TestMain(m *testing.M) {
	code := m.Run()
	if shared.env != nil {
		shared.env.API.Stop()
	}
	if shared.dir != "" {
		os.RemoveAll(shared.dir)
	}
	os.Exit(code)
}

func apiServer(t *testing.T) *clusterfixture.Env {
	t.Helper()
	shared.once.Do(func() {
		dir, err := os.MkdirTemp("", "reclaim-api-")
		if err != nil {
			t.Fatal(err)
		}
		shared.dir = dir
		env := clusterfixture.Start(t, dir)
		shared.env = env
		env.InstallPoolCRDs(t)
		env.Pool(t, "default", 26, "198.18.0.0/16")
	})
	if shared.env == nil {
		testsupport.SkipOrFail(t, "the API server did not start (see the first test's output)")
	}
	return shared.env
}

var t0 = time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)

func testConfig(grace time.Duration) reclaim.Config {
	c := reclaim.DefaultConfig()
	c.Grace, c.Interval, c.CheckInterval = grace, time.Minute, time.Minute
	return c
}

func newReclaimer(t *testing.T, env *clusterfixture.Env, cfg reclaim.Config, id string, clk *clocktesting.FakeClock, logs *testsupport.Buffer, onPass func(reclaim.Pass)) *reclaim.Reclaimer {
	t.Helper()
	checked := func(p reclaim.Pass) {
		expectConsistent(t, p)
		if onPass != nil {
			onPass(p)
		}
	}
	r, err := reclaim.New(reclaim.Clients{Kube: env.Client, Dynamic: env.Dynamic}, reclaim.Options{Config: cfg, Identity: id, Clock: clk,
		Logger: slog.New(slog.NewTextHandler(logs, nil)), OnPass: checked})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func newLogger() *slog.Logger { return slog.New(slog.NewTextHandler(&testsupport.Buffer{}, nil)) }

// runOnce runs one pass and checks that its decisions agree with their
// verdicts.
func runOnce(t *testing.T, r *reclaim.Reclaimer) reclaim.Pass {
	t.Helper()
	p := r.RunOnce(t.Context())
	expectConsistent(t, p)
	return p
}

// expectConsistent requires every decision's conditions to be the ones its
// verdict read: a reclaim exactly when all five hold. A candidate of the
// caches kept on fresh reads once showed the caches' conditions under the
// fresh verdict (the informer had not yet delivered ipamd's renewal).
func expectConsistent(t *testing.T, p reclaim.Pass) {
	t.Helper()
	for _, d := range p.Decisions {
		if all := d.NodeGone && d.LeaseExpired && len(d.Pods) == 0 && d.IpamdStopped && d.NodeDead; all != d.Reclaim {
			t.Errorf("decision on %s: conditions node gone %v, lease expired %v, pods %v, ipamd stopped %v, node dead %v, but verdict %+v",
				d.Block, d.NodeGone, d.LeaseExpired, d.Pods, d.IpamdStopped, d.NodeDead, d.Verdict)
		}
	}
}

// waitPass runs passes (at the fake clock's present time) until cond holds
// of one, and returns that pass: the caches catch up with what the test
// wrote through the watch, an event the test cannot wait on otherwise.
func waitPass(t *testing.T, r *reclaim.Reclaimer, what string, cond func(reclaim.Pass) bool) reclaim.Pass {
	t.Helper()
	var last reclaim.Pass
	testsupport.Wait(t, what, func() (bool, string) {
		last = runOnce(t, r)
		return cond(last), fmt.Sprintf("%+v", last)
	})
	return last
}

func keepReason(p reclaim.Pass, block, want string) bool {
	v, ok := p.Verdict(block)
	return ok && !v.Reclaim && v.Keep == want
}

// events are the Events on block, in the default namespace.
func events(t *testing.T, env *clusterfixture.Env, block v1alpha1.IPBlock) []corev1.Event {
	t.Helper()
	list, err := env.Client.CoreV1().Events(metav1.NamespaceDefault).List(t.Context(),
		metav1.ListOptions{FieldSelector: "involvedObject.name=" + block.Name + ",involvedObject.uid=" + string(block.UID)})
	if err != nil {
		t.Fatal(err)
	}
	return list.Items
}

func blockGone(t *testing.T, env *clusterfixture.Env, name string) bool {
	t.Helper()
	_, err := env.Dynamic.Resource(v1alpha1.IPBlockResource).Get(t.Context(), name, metav1.GetOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	return apierrors.IsNotFound(err)
}

// gauge reads one series of the registry; labels as "k=v" pairs.
func gauge(t *testing.T, reg *prometheus.Registry, name string, labels ...string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			var have []string
			for _, l := range m.GetLabel() {
				have = append(have, l.GetName()+"="+l.GetValue())
			}
			if !slices.Equal(have, labels) {
				continue
			}
			if m.GetGauge() != nil {
				return m.GetGauge().GetValue()
			}
			return m.GetCounter().GetValue()
		}
	}
	t.Fatalf("no series %s%v", name, labels)
	return 0
}
