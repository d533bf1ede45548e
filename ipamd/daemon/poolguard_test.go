package daemon_test

import (
	"context"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sandboxipam/sandboxipam/cluster/api/v1alpha1"
	"github.com/sandboxipam/sandboxipam/internal/clusterfixture"
	"github.com/sandboxipam/sandboxipam/internal/testsupport"
	"github.com/sandboxipam/sandboxipam/ipamd/introspect/client"
)

// An IPBlock deleted from the API server (kubectl delete, an etcd
// restore) while pods here hold addresses of its block: ipamd claims it
// again under its Node's UID at once, so no other node can take the block
// and hand those addresses out a second time, and retires it (nothing
// more is handed out of it); once its last holder goes, the block leaves
// and ipamd deletes the IPBlock it made. A block another node claimed
// meanwhile (here while ipamd was stopped) is never taken back nor
// deleted: it retires, is shown as foreign (Status.Foreign, the metric
// ipamd_pool_foreign_blocks) while an address of it is held here, and the
// next ADD gets a block of its own.
func TestPoolSourceKeepsHeldAddressesInItsOwnBlocks(t *testing.T) {
	const name = "node-p5"
	p := startProvenPool(t, name)
	e, n, clock, d, cni, intro, old := p.e, p.n, p.clock, p.d, p.cni, p.intro, p.first
	ctx := t.Context()
	p.addFirstTwo(t)

	deleteIPBlock(t, e, old)
	fresh := waitRetiredAndNew(t, intro, old)
	testsupport.Wait(t, "the deleted IPBlock claimed again under this Node's UID", func() (bool, string) {
		got := apiBlocks(t, e)
		return slices.Equal(got, sortedOf(old+"@"+name, fresh+"@"+name)) && d.PoolSource().Status().Restored == 1,
			fmt.Sprintf("%v, status %+v", got, d.PoolSource().Status())
	})
	n.addSandbox("sandbox-2")
	if got, want := mustAddIPs(t, cni, "sandbox-2"), hosts(fresh)[:1]; !slices.Equal(got, want) {
		t.Fatalf("ADD after the IPBlock was deleted got %v, want %v (never the retiring %s)", got, want, old)
	}
	mustDel(t, cni, n, "sandbox-0", "sandbox-1")
	waitPoolSet(t, intro, fresh)
	testsupport.Wait(t, "the IPBlock claimed again to be deleted once its last holder left", func() (bool, string) {
		got := apiBlocks(t, e)
		return slices.Equal(got, []string{fresh + "@" + name}), fmt.Sprint(got)
	})

	// While ipamd is stopped, the IPBlock of the block sandbox-2 holds an
	// address of goes, and another node claims the block.
	if err := d.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	deleteIPBlock(t, e, fresh)
	otherUID, err := clusterfixture.CreateNode(ctx, e.kube, "node-other")
	if err != nil {
		t.Fatal(err)
	}
	b := v1alpha1.NewBlock("default", netip.MustParsePrefix(fresh), "node-other", otherUID, metav1.NewTime(clock.Now()))
	u, err := v1alpha1.ToUnstructured(&b)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.kube.Dynamic.Resource(v1alpha1.IPBlockResource).Create(ctx, u, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	d, _, cni, intro = startPoolDaemon(t, e, n, clock)
	next := waitRetiredAndNew(t, intro, fresh)
	wantForeign := map[string]string{fresh: "node-other"}
	testsupport.Wait(t, "the block another node claimed shown as foreign", func() (bool, string) {
		st := d.PoolSource().Status()
		return maps.Equal(st.Foreign, wantForeign), fmt.Sprintf("%+v", st)
	})
	waitUnfenced(t, d)
	n.addSandbox("sandbox-3")
	if got, want := mustAddIPs(t, cni, "sandbox-3"), hosts(next)[:1]; !slices.Equal(got, want) {
		t.Fatalf("ADD beside the foreign block got %v, want %v", got, want)
	}
	mustDel(t, cni, n, "sandbox-2")
	waitPoolSet(t, intro, next)
	testsupport.Wait(t, "nothing foreign once sandbox-2 left", func() (bool, string) {
		st := d.PoolSource().Status()
		return len(st.Foreign) == 0, fmt.Sprintf("%+v", st)
	})
	fullPass(d)
	bs, err := clusterfixture.Blocks(ctx, e.kube.Dynamic)
	if err != nil {
		t.Fatal(err)
	}
	if len(bs) != 2 || bs[fresh].Spec.NodeUID != otherUID || bs[next].Spec.NodeName != name {
		t.Fatalf("IPBlocks %+v, want %s still node-other's (UID %s) and %s this node's", bs, fresh, otherUID, next)
	}
}

// deleteIPBlock deletes block's IPBlock, as kubectl delete would.
func deleteIPBlock(t *testing.T, e *poolEnv, block string) {
	t.Helper()
	name := v1alpha1.BlockName(netip.MustParsePrefix(block))
	if err := e.kube.Dynamic.Resource(v1alpha1.IPBlockResource).Delete(t.Context(), name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
}

// waitRetiredAndNew waits until block retires beside exactly one current
// block, and returns that one.
func waitRetiredAndNew(t *testing.T, intro *client.Client, block string) string {
	t.Helper()
	var current string
	testsupport.Wait(t, block+" to retire beside a new block", func() (bool, string) {
		got := poolSet(t, intro)
		current = ""
		for _, r := range got {
			if !strings.HasSuffix(r, " retiring") {
				current = r
			}
		}
		return len(got) == 2 && slices.Contains(got, block+" retiring") && current != "", fmt.Sprint(got)
	})
	return current
}

// sortedOf is s sorted.
func sortedOf(s ...string) []string {
	slices.Sort(s)
	return s
}

// This Node deleted (its kubelet stopped, say) while its pods' sandboxes
// still run here, and then the IPBlock of a block they hold addresses of
// goes too, as the reclaimer deletes it once the pods are force-deleted
// from the API: ipamd cannot claim it again (a claim under a gone Node's
// UID would be reclaimed again), so it retires the block and shows it as
// foreign with no owner (any node may claim it) until its last holder
// goes.
func TestPoolSourceNodeGoneShowsUnclaimedBlocks(t *testing.T) {
	const name = "node-p6"
	p := startProvenPool(t, name)
	e, n, d, cni, intro, first := p.e, p.n, p.d, p.cni, p.intro, p.first
	p.addFirstTwo(t)
	if err := e.kube.CoreV1().Nodes().Delete(t.Context(), name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	deleteIPBlock(t, e, first)
	waitPoolSet(t, intro, first+" retiring")
	wantForeign := map[string]string{first: ""}
	testsupport.Wait(t, "the unclaimed block shown as foreign", func() (bool, string) {
		st := d.PoolSource().Status()
		return maps.Equal(st.Foreign, wantForeign), fmt.Sprintf("%+v", st)
	})
	fullPass(d)
	if got := apiBlocks(t, e); len(got) != 0 {
		t.Fatalf("IPBlocks %v with this Node gone, want none (no claim under a gone Node's UID)", got)
	}
	if st := d.PoolSource().Status(); st.Restored != 0 || st.Claims != 1 {
		t.Fatalf("status %+v, want no claim beyond the first block", st)
	}
	mustDel(t, cni, n, "sandbox-0", "sandbox-1")
	waitPoolSet(t, intro)
	testsupport.Wait(t, "nothing foreign once the pods left", func() (bool, string) {
		st := d.PoolSource().Status()
		return len(st.Foreign) == 0, fmt.Sprintf("%+v", st)
	})
}
