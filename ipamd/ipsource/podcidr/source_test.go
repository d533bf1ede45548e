package podcidr

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/sandboxipam/sandboxipam/internal/clusterfixture"
	"github.com/sandboxipam/sandboxipam/internal/testsupport"
	"github.com/sandboxipam/sandboxipam/ipamd/datastore"
)

// sourceNode is the source of Node node-1 over a store at path.
type sourceNode struct {
	path  string
	store *datastore.Store
	src   *Source
}

func openSource(t *testing.T, path string, env *clusterfixture.Env) *sourceNode {
	t.Helper()
	store, err := datastore.Open(t.Context(), datastore.Options{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close() })
	var client kubernetes.Interface
	if env != nil {
		client = env.Client
	}
	src, err := New(Config{NodeName: "node-1"}, client, store, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return &sourceNode{path: path, store: store, src: src}
}

// ranges renders the pool's blocks as "prefix" or "prefix retiring".
func (n *sourceNode) ranges() string {
	var out []string
	for _, r := range n.store.Ranges() {
		s := r.Range.Prefix.String()
		if r.Retiring {
			s += " retiring"
		}
		out = append(out, s)
	}
	return strings.Join(out, ",")
}

func (n *sourceNode) waitRanges(t *testing.T, want string) {
	t.Helper()
	testsupport.Wait(t, "the pool's ranges to be "+want, func() (bool, string) {
		got := n.ranges()
		return got == want, got
	})
}

func key(id string) datastore.Key {
	return datastore.Key{Network: "pods", SandboxID: id, IfName: "eth0"}
}

func (n *sourceNode) assign(t *testing.T, id string) ([]string, error) {
	t.Helper()
	a, err := n.store.Assign(t.Context(), key(id), datastore.Pod{Name: id})
	var ips []string
	for _, ip := range a.IPs() {
		ips = append(ips, ip.String())
	}
	return ips, err
}

// The source against a real API server: the pool waits, naming the Node,
// until it has podCIDRs; then it holds exactly those ranges, both
// families. The Node deleted and registered again with another range: the
// checkpoint records the new UID, the old ranges retire while a pod holds
// an address of them, new pods get the new ranges only (never a retiring
// one, even when the new range is full), and an old range goes with its
// last address. Reopened with no API server, Restore serves the
// checkpoint's ranges.
func TestSourceFollowsTheNode(t *testing.T) {
	env := clusterfixture.Start(t, t.TempDir())
	t.Cleanup(env.API.Stop)
	n := openSource(t, filepath.Join(t.TempDir(), "ck"), env)
	ctx, cancel := context.WithCancel(t.Context())
	if ok, err := n.src.Restore(ctx); ok || err != nil {
		t.Fatalf("Restore of an empty checkpoint = %v, %v; want no ranges", ok, err)
	}
	ran := make(chan error, 1)
	go func() { ran <- n.src.Run(ctx) }()
	env.Node(t, "node-1")
	<-n.src.Synced()
	if _, err := n.assign(t, "early"); !errors.Is(err, datastore.ErrPoolNotReady) || !strings.Contains(err.Error(), "Node node-1's spec.podCIDRs") {
		t.Fatalf("Assign before podCIDRs = %v, want ErrPoolNotReady naming the Node's spec.podCIDRs", err)
	}
	patch := []byte(`{"spec":{"podCIDR":"198.18.1.0/29","podCIDRs":["198.18.1.0/29","fd00:1::/125"]}}`)
	if _, err := env.Client.CoreV1().Nodes().Patch(ctx, "node-1", "application/merge-patch+json", patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	n.waitRanges(t, "198.18.1.0/29,fd00:1::/125")
	if got, err := n.assign(t, "a"); err != nil || !slices.Equal(got, []string{"198.18.1.1", "fd00:1::1"}) {
		t.Fatalf("first pod got %v, %v; want 198.18.1.1 and fd00:1::1", got, err)
	}
	reregister(t, env, n)

	cancel()
	if err := <-ran; err != nil {
		t.Fatalf("Run: %v", err)
	}
	if err := n.store.Close(); err != nil {
		t.Fatal(err)
	}
	env.API.Stop()
	again := openSource(t, n.path, nil)
	if ok, err := again.src.Restore(t.Context()); !ok || err != nil {
		t.Fatalf("Restore from the checkpoint = %v, %v; want its ranges", ok, err)
	}
	if got := again.ranges(); got != "198.18.2.0/29,fd00:2::/125" {
		t.Fatalf("ranges after Restore %s, want the checkpoint's 198.18.2.0/29,fd00:2::/125", got)
	}
	if _, ok := again.store.Lookup(key("b")); !ok {
		t.Fatal("pod b's addresses are gone after the restart")
	}
}

// reregister deletes Node node-1 and registers it again with new ranges
// while pod "a" holds addresses of the old ones.
func reregister(t *testing.T, env *clusterfixture.Env, n *sourceNode) {
	t.Helper()
	old, err := env.Client.CoreV1().Nodes().Get(t.Context(), "node-1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	uid1 := string(old.UID)
	env.DeleteNode(t, "node-1")
	n.waitRanges(t, "198.18.1.0/29 retiring,fd00:1::/125 retiring")
	uid2 := string(env.Node(t, "node-1", "198.18.2.0/29", "fd00:2::/125").UID)
	if uid2 == uid1 {
		t.Fatalf("the Node registered again kept its UID %s", uid1)
	}
	n.waitRanges(t, "198.18.1.0/29 retiring,198.18.2.0/29,fd00:1::/125 retiring,fd00:2::/125")
	if rec, _ := n.store.NodeRecord(); rec.UID != uid2 || fmt.Sprint(rec.PodCIDRs) != "[198.18.2.0/29 fd00:2::/125]" {
		t.Fatalf("checkpoint record %+v, want UID %s and the new ranges", rec, uid2)
	}
	for _, id := range []string{"b", "c", "d", "e", "f", "g"} {
		ips, err := n.assign(t, id)
		if err != nil {
			t.Fatalf("Assign %s: %v", id, err)
		}
		for _, ip := range ips {
			if !strings.HasPrefix(ip, "198.18.2.") && !strings.HasPrefix(ip, "fd00:2::") {
				t.Fatalf("pod %s got %s, outside the Node's current ranges", id, ip)
			}
		}
	}
	if _, err := n.assign(t, "h"); err == nil || !strings.Contains(err.Error(), "exhausted") {
		t.Fatalf("Assign with the new IPv4 range full = %v, want exhausted (a retiring range hands out nothing)", err)
	}
	if _, released, err := n.store.Release(t.Context(), key("a")); err != nil || !released {
		t.Fatalf("Release of the old pod = %v, %v", released, err)
	}
	n.waitRanges(t, "198.18.2.0/29,fd00:2::/125")
}
