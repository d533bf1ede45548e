package reclaim_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sandboxipam/sandboxipam/cluster/api/ipamdlease"
	"github.com/sandboxipam/sandboxipam/cluster/api/v1alpha1"
	"github.com/sandboxipam/sandboxipam/cluster/reclaim"
)

// ConfirmNodeGone, the logic of ipamctl's operator confirmation, on a
// real API server: it refuses while the Node exists under the UID, asks
// for the UID when the blocks name several, shows each block with the
// reclaimer's decision and writes nothing until asked, then annotates
// exactly the blocks of that UID.
func TestConfirmNodeGone(t *testing.T) {
	env := apiServer(t)
	clients := reclaim.Clients{Kube: env.Client, Dynamic: env.Dynamic}
	n := env.Node(t, "cf-n1")
	uid := string(n.UID)
	b1 := env.Block(t, "default", "198.18.11.0/26", "cf-n1", n.UID)
	b2 := env.Block(t, "default", "198.18.11.64/26", "cf-n1", n.UID)
	former := env.Block(t, "default", "198.18.11.128/26", "cf-n1", "cf-n1-former")
	ctx := t.Context()
	// Confirmed blocks of a gone node would be reclaimed by the other
	// tests' reclaimers on this shared API server.
	t.Cleanup(func() {
		for _, b := range []v1alpha1.IPBlock{b1, b2, former} {
			_ = env.Dynamic.Resource(v1alpha1.IPBlockResource).Delete(context.Background(), b.Name, metav1.DeleteOptions{})
		}
	})
	if _, err := reclaim.ConfirmNodeGone(ctx, clients, reclaim.GoneRequest{Node: "cf-n1"}); !errors.Is(err, reclaim.ErrSeveralUIDs) ||
		!strings.Contains(err.Error(), "cf-n1-former, "+uid) && !strings.Contains(err.Error(), uid+", cf-n1-former") {
		t.Fatalf("no UID given, two named: %v", err)
	}
	if _, err := reclaim.ConfirmNodeGone(ctx, clients, reclaim.GoneRequest{Node: "cf-n1", UID: uid, Apply: true}); !errors.Is(err, reclaim.ErrNodeExists) {
		t.Fatalf("the Node exists: %v", err)
	}
	if _, err := reclaim.ConfirmNodeGone(ctx, clients, reclaim.GoneRequest{Node: "cf-nobody"}); !errors.Is(err, reclaim.ErrNoBlocks) {
		t.Fatalf("a node without blocks: %v", err)
	}
	env.DeleteNode(t, "cf-n1")
	seen := &reclaim.Decisions{Identity: "r-0", Pass: &reclaim.Pass{Decisions: []reclaim.Decision{{Block: b1.Name, NodeGone: true, LeaseExpired: true, IpamdStopped: true,
		Verdict: reclaim.Verdict{Keep: "no answer from the ipamd of node cf-n1 for 1m0s, not longer than the grace 5m0s"}}}}}
	rep, err := reclaim.ConfirmNodeGone(ctx, clients, reclaim.GoneRequest{Node: "cf-n1", UID: uid, Seen: seen})
	if err != nil || rep.Applied || len(rep.Blocks) != 2 || rep.Blocks[0].Name != b1.Name || rep.Blocks[1].Name != b2.Name ||
		rep.Blocks[0].Decision == nil || rep.Blocks[1].Decision != nil {
		t.Fatalf("shown: %+v, %v", rep, err)
	}
	var out strings.Builder
	if err := rep.Render(&out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"node cf-n1 (UID " + uid + "): 2 IPBlock(s)\n", "  198.18.11.0-26 (198.18.11.0/26)\n",
		"    kept: no answer from the ipamd of node cf-n1 for 1m0s, not longer than the grace 5m0s\n", "    the reclaimer's decision: not available\n", "nothing written"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("rendered:\n%s\nwant %q", out.String(), want)
		}
	}
	confirmed := func(name string) string {
		t.Helper()
		u, err := env.Dynamic.Resource(v1alpha1.IPBlockResource).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return u.GetAnnotations()[ipamdlease.ConfirmNodeGoneAnnotation]
	}
	if confirmed(b1.Name) != "" {
		t.Fatal("a confirmation written without Apply")
	}
	rep, err = reclaim.ConfirmNodeGone(ctx, clients, reclaim.GoneRequest{Node: "cf-n1", UID: uid, Apply: true})
	if err != nil || !rep.Applied {
		t.Fatalf("applied: %+v, %v", rep, err)
	}
	if confirmed(b1.Name) != uid || confirmed(b2.Name) != uid || confirmed(former.Name) != "" {
		t.Fatalf("annotations: %q %q %q", confirmed(b1.Name), confirmed(b2.Name), confirmed(former.Name))
	}
}
