package kubernetes

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	k8stypes "k8s.io/apimachinery/pkg/types"

	deploy "github.com/sandboxipam/sandboxipam/deploy/kubernetes"
	"github.com/sandboxipam/sandboxipam/internal/testsupport"
)

// rolloutWatch follows a rollout from the API server, every
// rolloutPoll: when each node's old ipamd pod began to go and when its
// new one was ready, how many nodes were without a ready ipamd at once,
// when each pod of the Deployment not in before was first seen and when
// it was ready with its addresses, and any address two pods hold.
type rolloutWatch struct {
	c      *cluster
	old    []k8stypes.UID
	before map[string]clusterPod
	began  time.Time
	stop   chan struct{}
	done   chan struct{}

	mu       sync.Mutex
	down     map[string]time.Time // node -> first poll that found its old ipamd going or gone
	up       map[string]time.Time // node -> first poll that found a new ipamd ready on it
	maxDown  int
	seen     map[string]time.Time // new pod -> first poll that found it
	ready    map[string]time.Time // new pod -> first poll that found it ready, with addresses
	problems []string
}

const rolloutPoll = 250 * time.Millisecond

func (c *cluster) watchRollout(old []k8stypes.UID, before clusterState) *rolloutWatch {
	w := &rolloutWatch{c: c, old: old, before: before.pods, began: time.Now(), stop: make(chan struct{}), done: make(chan struct{}),
		down: map[string]time.Time{}, up: map[string]time.Time{}, seen: map[string]time.Time{}, ready: map[string]time.Time{}}
	go func() {
		defer close(w.done)
		tick := time.NewTicker(rolloutPoll)
		defer tick.Stop()
		for {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			w.poll(ctx)
			cancel()
			select {
			case <-w.stop:
				return
			case <-tick.C:
			}
		}
	}()
	return w
}

func (w *rolloutWatch) poll(ctx context.Context) {
	now := time.Now()
	ipamds, err := w.c.ipamdPods(ctx)
	if err != nil {
		return // the API server answers slowly under load; the next poll asks again
	}
	var list corev1.PodList
	if err := w.c.api.get(ctx, "/api/v1/namespaces/default/pods?labelSelector="+url.QueryEscape("app="+webName), &list); err != nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	downNow := 0
	for _, n := range w.c.nodes {
		serving, oldThere := false, false
		for _, p := range ipamds {
			if p.Spec.NodeName != n.name {
				continue
			}
			isOld := slices.Contains(w.old, p.UID)
			if isOld && p.DeletionTimestamp == nil {
				oldThere = true
			}
			if p.DeletionTimestamp == nil && podReady(&p) {
				serving = true
				if !isOld {
					if _, ok := w.up[n.name]; !ok {
						w.up[n.name] = now
					}
				}
			}
		}
		if !oldThere {
			if _, ok := w.down[n.name]; !ok {
				w.down[n.name] = now
			}
		}
		if !serving {
			downNow++
		}
	}
	w.maxDown = max(w.maxDown, downNow)
	holder := map[string]string{}
	for _, p := range list.Items {
		for _, ip := range p.Status.PodIPs {
			if other, dup := holder[ip.IP]; dup {
				w.problems = append(w.problems, fmt.Sprintf("[%s] address %s held by pods %s and %s", now.Sub(w.began).Round(time.Millisecond), ip.IP, other, p.Name))
			}
			holder[ip.IP] = p.Name
		}
		if _, known := w.before[p.Name]; known {
			continue
		}
		if _, ok := w.seen[p.Name]; !ok {
			w.seen[p.Name] = now
		}
		if _, ok := w.ready[p.Name]; !ok && p.DeletionTimestamp == nil && podReady(&p) && len(p.Status.PodIPs) > 0 {
			w.ready[p.Name] = now
		}
	}
}

// everyNodeRolled reports whether every node's old ipamd went and a new
// one was seen ready there.
func (w *rolloutWatch) everyNodeRolled() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, n := range w.c.nodes {
		if _, ok := w.down[n.name]; !ok {
			return fmt.Errorf("%s's old ipamd still runs", n.name)
		}
		if _, ok := w.up[n.name]; !ok {
			return fmt.Errorf("%s has no new ipamd ready", n.name)
		}
	}
	return nil
}

// sawReady reports whether the watch has seen every pod of after that is
// not in before ready, with its addresses.
func (w *rolloutWatch) sawReady(after clusterState) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	for name := range after.pods {
		if _, known := w.before[name]; known {
			continue
		}
		if _, ok := w.ready[name]; !ok {
			return fmt.Errorf("pod %s not yet seen ready", name)
		}
	}
	return nil
}

// rollingAt reports whether node's ipamd was being replaced at the time
// at: its old pod going or gone, its new one not yet ready.
func (w *rolloutWatch) rollingAt(node string, at time.Time) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	down, ok := w.down[node]
	if !ok || at.Before(down) {
		return false
	}
	up, ok := w.up[node]
	return !ok || at.Before(up)
}

// started reports whether a node's old ipamd has begun to go.
func (w *rolloutWatch) started() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.down) > 0
}

func (w *rolloutWatch) halt() {
	select {
	case <-w.stop:
	default:
		close(w.stop)
	}
	<-w.done
}

// nodeRollout is one node's part of a rollout: from the first poll that
// found its old ipamd pod going (or gone) to the first that found the new
// one ready, and its order among the nodes.
type nodeRollout struct {
	node       string
	down, took time.Duration // down: since the rollout began
}

// rollouts are the nodes' rollouts in the order they went.
func (w *rolloutWatch) rollouts() []nodeRollout {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []nodeRollout
	for node, d := range w.down {
		out = append(out, nodeRollout{node: node, down: d.Sub(w.began), took: w.up[node].Sub(d)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].down < out[j].down })
	return out
}

// podWait is how long a pod created during a rollout took from the first
// poll that saw it to the first that saw it ready with its addresses, and
// how many times the kubelet failed to create its sandbox (each a CNI
// ADD that did not succeed) before one did.
type podWait struct {
	pod, node string
	took      time.Duration
	failed    int32
	why       string // the kubelet's last FailedCreatePodSandBox message
}

// podWaits are the waits of the pods in after and not in before.
func (w *rolloutWatch) podWaits(t *testing.T, after clusterState) []podWait {
	t.Helper()
	var events corev1.EventList
	if err := w.c.api.get(context.Background(), "/api/v1/namespaces/default/events", &events); err != nil {
		t.Fatal(err)
	}
	failed, why := map[string]int32{}, map[string]string{}
	for _, e := range events.Items {
		if e.Reason == "FailedCreatePodSandBox" && e.InvolvedObject.Kind == "Pod" {
			failed[e.InvolvedObject.Name] += max(e.Count, 1)
			why[e.InvolvedObject.Name] = e.Message
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []podWait
	for name, p := range after.pods {
		if _, known := w.before[name]; known {
			continue
		}
		seen, ok1 := w.seen[name]
		ready, ok2 := w.ready[name]
		if !ok1 || !ok2 {
			t.Fatalf("pod %s: the rollout's watch saw it %v, ready %v", name, ok1, ok2)
		}
		out = append(out, podWait{pod: name, node: p.Node, took: ready.Sub(seen), failed: failed[name], why: why[name]})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].pod < out[j].pod })
	return out
}

// waitReclaimerRolled waits until the reclaimer's Deployment has rolled
// out: every replica updated, ready and available, no old one left, each
// running image.
func (c *cluster) waitReclaimerRolled(t *testing.T, image string) {
	t.Helper()
	path := "/apis/apps/v1/namespaces/kube-system/deployments/" + deploy.ReclaimerName
	testsupport.WaitFor(t, 3*time.Minute, "the reclaimer's Deployment rolls out "+image, func(ctx context.Context) error {
		var d appsv1.Deployment
		if err := c.api.get(ctx, path, &d); err != nil {
			return err
		}
		st, want := d.Status, *d.Spec.Replicas
		if st.ObservedGeneration < d.Generation || st.Replicas != want || st.UpdatedReplicas != want ||
			st.ReadyReplicas != want || st.AvailableReplicas != want || st.UnavailableReplicas != 0 {
			return fmt.Errorf("status %+v", st)
		}
		var pods corev1.PodList
		if err := c.api.get(ctx, "/api/v1/namespaces/kube-system/pods?labelSelector="+url.QueryEscape("app.kubernetes.io/name="+deploy.ReclaimerName), &pods); err != nil {
			return err
		}
		var running []string
		for _, p := range pods.Items {
			if p.DeletionTimestamp != nil || !podReady(&p) || p.Spec.Containers[0].Image != image {
				return fmt.Errorf("pod %s (%s, ready %v) not a ready one of %s", p.Name, p.Spec.Containers[0].Image, podReady(&p), image)
			}
			running = append(running, p.Name+"@"+p.Spec.NodeName)
		}
		if int32(len(running)) != want {
			return fmt.Errorf("%d reclaimer pods, want %d: %v", len(running), want, running)
		}
		return nil
	})
}

// ipamdImages fails unless every ipamd pod's containers run image.
func ipamdImages(t *testing.T, byNode map[string]corev1.Pod, image string) {
	t.Helper()
	for node, p := range byNode {
		for _, ctr := range append(slices.Clone(p.Spec.InitContainers), p.Spec.Containers...) {
			if ctr.Image != image {
				t.Fatalf("%s's ipamd pod %s: container %s runs %s, want %s", node, p.Name, ctr.Name, ctr.Image, image)
			}
		}
	}
}

// formatRollouts lays out a rollout's figures, node by node.
func formatRollouts(rs []nodeRollout) string {
	var s []string
	for _, r := range rs {
		s = append(s, fmt.Sprintf("%s %.1fs (from +%.1fs)", r.node, r.took.Seconds(), r.down.Seconds()))
	}
	return strings.Join(s, ", ")
}
