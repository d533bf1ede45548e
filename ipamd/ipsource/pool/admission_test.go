package pool_test

import (
	"context"
	"log/slog"
	"net/netip"
	"path/filepath"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/sandboxipam/sandboxipam/cluster/api/ipamdlease"
	"github.com/sandboxipam/sandboxipam/cluster/api/v1alpha1"
	deploykube "github.com/sandboxipam/sandboxipam/deploy/kubernetes"
	"github.com/sandboxipam/sandboxipam/internal/clusterfixture"
	"github.com/sandboxipam/sandboxipam/internal/kubeenv"
	"github.com/sandboxipam/sandboxipam/internal/testsupport"
	"github.com/sandboxipam/sandboxipam/ipamd/datastore"
	"github.com/sandboxipam/sandboxipam/ipamd/ipsource/pool"
	"github.com/sandboxipam/sandboxipam/ipamd/ipsource/pool/poolconf"
	"github.com/sandboxipam/sandboxipam/ipamd/kubeclient"
)

// One node's token acts for that node only (issue 37, item 3). On an API
// server that authorizes by RBAC, with components/pool's RBAC and
// admission policies as rendered, ipamd's ServiceAccount token bound to a
// pod on node A (so the API server names node A and its UID in the
// token's user) is refused each attack the issue reproduced: a block for
// node B, a block under B's UID, 0.0.0.0-1, a block whose name is not its
// CIDR's, a block of the wrong size or overlapping another pool, deleting
// B's block; an unbound token of the account writes nothing. A's own
// claims and returns still work, through the real pool source; an
// administrator is not restricted.
func TestNodeTokenActsForItsNodeOnly(t *testing.T) {
	env := clusterfixture.StartWith(t, kubeenv.Options{Dir: t.TempDir(), Authorization: "RBAC"})
	t.Cleanup(env.API.Stop)
	env.InstallPoolCRDs(t)
	env.Pool(t, "default", 26, "198.18.0.0/24")
	env.Pool(t, "other", 26, "198.18.8.0/24")
	a, b := env.Node(t, "node-a"), env.Node(t, "node-b")
	applyPoolComponent(t, env)
	cfgA := env.BoundToken(t, "kube-system", "sandboxipam", "ipamd-a", a.Name)
	kcA, err := kubeclient.FromConfig(cfgA)
	if err != nil {
		t.Fatal(err)
	}
	ctx, asA, admin := t.Context(), kcA.Dynamic.Resource(v1alpha1.IPBlockResource), env.Dynamic.Resource(v1alpha1.IPBlockResource)
	bBlock := env.Block(t, "default", "198.18.0.0/26", b.Name, b.UID)

	attacks := []struct {
		what, pool, cidr, name, node string
		uid                          types.UID
		want                         string
	}{
		{"a block for node B", "default", "198.18.0.128/26", "", b.Name, b.UID, "the token of node node-a may write only IPBlocks of that node"},
		{"a block for node A under B's UID", "default", "198.18.0.128/26", "", a.Name, b.UID, "the token of node node-a may write only IPBlocks of that node"},
		// Judged against each pool: "not a block of IPPool default" or
		// "overlaps IPPool other", whichever the API server reports.
		{"0.0.0.0-1", "default", "0.0.0.0/1", "", a.Name, a.UID, "IPPool"},
		{"a block of the wrong size", "default", "198.18.0.0/25", "", a.Name, a.UID, "is not a block of IPPool default"},
		{"a block over another pool", "other", "198.18.0.128/26", "", a.Name, a.UID, "IPPool"},
		{"a block whose name is not its CIDR's", "default", "198.18.0.128/26", "198.18.0.192-26", a.Name, a.UID, "the name must be the canonical name of spec.cidr"},
	}
	for _, at := range attacks {
		obj := v1alpha1.NewBlock(at.pool, netip.MustParsePrefix(at.cidr), at.node, string(at.uid), metav1.Now())
		if at.name != "" {
			obj.Name = at.name
		}
		waitRefused(t, ctx, admin, at.what, func() error { return createBlock(ctx, asA, obj) }, at.want)
	}
	uid, rv := bBlock.UID, bBlock.ResourceVersion
	err = asA.Delete(ctx, bBlock.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid, ResourceVersion: &rv}})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "may write only IPBlocks of that node") {
		t.Errorf("node A deleting node B's block: %v, want Forbidden", err)
	}
	unbound := env.Token(t, "kube-system", "sandboxipam")
	own := v1alpha1.NewBlock("default", netip.MustParsePrefix("198.18.0.192/26"), a.Name, string(a.UID), metav1.Now())
	if err := createBlock(ctx, dynamic.NewForConfigOrDie(unbound).Resource(v1alpha1.IPBlockResource), own); !apierrors.IsForbidden(err) ||
		!strings.Contains(err.Error(), "not bound to a pod on a node") {
		t.Errorf("an unbound token of ipamd's account creating a block: %v, want Forbidden: not bound to a pod on a node", err)
	}

	leaseOnlyItsOwn(t, ctx, kcA, a.Name)
	claimAndReturn(t, ctx, kcA, a.Name)
	if err := admin.Delete(ctx, bBlock.Name, metav1.DeleteOptions{}); err != nil {
		t.Errorf("an administrator deleting node B's block: %v", err)
	}
}

// waitRefused creates through create until the API server refuses it with
// want: the policies take effect a moment after they are created, so a
// write they let through meanwhile is undone (as the administrator) and
// tried again, up to testsupport's deadline.
func waitRefused(t *testing.T, ctx context.Context, admin dynamic.ResourceInterface, what string, create func() error, want string) {
	t.Helper()
	testsupport.Wait(t, "node A's token to be refused "+what, func() (bool, string) {
		err := create()
		if err == nil {
			l, _ := admin.List(ctx, metav1.ListOptions{})
			for _, o := range l.Items {
				if o.GetName() != "198.18.0.0-26" {
					_ = admin.Delete(ctx, o.GetName(), metav1.DeleteOptions{})
				}
			}
			return false, "accepted"
		}
		return (apierrors.IsForbidden(err) || apierrors.IsInvalid(err)) && strings.Contains(err.Error(), want), err.Error()
	})
}

// leaseOnlyItsOwn: the Role that lets ipamd renew its Lease covers every
// Lease in kube-system, the control plane's leader-election Leases among
// them; node A's token is refused those (and node B's ipamd Lease) and
// may write its own, as the pool source's renewer does.
func leaseOnlyItsOwn(t *testing.T, ctx context.Context, kc *kubeclient.Client, node string) {
	t.Helper()
	leases := kc.CoordinationV1().Leases("kube-system")
	create := func(name string) error {
		l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name}}
		_, err := leases.Create(ctx, l, metav1.CreateOptions{})
		return err
	}
	for _, name := range []string{"kube-controller-manager", "sandboxipam-reclaimer", ipamdlease.IpamdLeaseName("node-b")} {
		testsupport.Wait(t, "node A's token to be refused the Lease "+name, func() (bool, string) {
			err := create(name)
			if err == nil {
				_ = leases.Delete(ctx, name, metav1.DeleteOptions{}) // before the policy took effect
				return false, "accepted"
			}
			return apierrors.IsForbidden(err) && strings.Contains(err.Error(), "may write only the Lease "+ipamdlease.IpamdLeaseName(node)), err.Error()
		})
	}
	if err := create(ipamdlease.IpamdLeaseName(node)); err != nil {
		t.Errorf("node A's token creating its own Lease: %v", err)
	}
}

func createBlock(ctx context.Context, r dynamic.ResourceInterface, b v1alpha1.IPBlock) error {
	u, err := v1alpha1.ToUnstructured(&b)
	if err != nil {
		return err
	}
	_, err = r.Create(ctx, u, metav1.CreateOptions{})
	return err
}

// claimAndReturn runs the real pool source as node A with A's token
// until it has claimed a block of its own (a create under the policies)
// and handed out an address of it; then, the source stopped and the
// address released, A's token deletes the block with the UID and
// resourceVersion preconditions the source's own return uses.
func claimAndReturn(t *testing.T, ctx context.Context, kc *kubeclient.Client, node string) {
	t.Helper()
	runCtx, cancel := context.WithCancel(ctx)
	store, err := datastore.Open(ctx, datastore.Options{Path: filepath.Join(t.TempDir(), "a.ckpt"), Cooldown: time.Millisecond,
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close() })
	cfg := poolconf.DefaultConfig()
	cfg.Interval = 20 * time.Millisecond
	src, err := pool.New(cfg, node, kc, kc.Dynamic, store, pool.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := src.Restore(ctx); err != nil {
		t.Fatal(err)
	}
	n := &simNode{name: node, store: store, src: src, kc: kc, stopped: make(chan struct{})}
	go func() { defer close(n.stopped); _ = src.Run(runCtx) }()
	as, err := n.add(runCtx, "pod-1")
	cancel()
	<-n.stopped
	if err != nil {
		t.Fatalf("node A's first ADD: %v (status %+v)", err, src.Status())
	}
	st := src.Status()
	if st.Claims != 1 || len(st.Blocks) != 1 || !netip.MustParsePrefix(st.Blocks[0]).Contains(as.IPs()[0]) {
		t.Fatalf("node A claimed %+v and handed out %v, want one block holding it", st, as.IPs())
	}
	if _, _, err := store.Release(ctx, datastore.Key{Network: "simnet", SandboxID: "pod-1", IfName: "eth0"}); err != nil {
		t.Fatal(err)
	}
	r := kc.Dynamic.Resource(v1alpha1.IPBlockResource)
	name := v1alpha1.BlockName(netip.MustParsePrefix(st.Blocks[0]))
	got, err := r.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	uid, rv := got.GetUID(), got.GetResourceVersion()
	if err := r.Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid, ResourceVersion: &rv}}); err != nil {
		t.Errorf("node A returning its own block %s: %v", name, err)
	}
}

// applyPoolComponent creates what components/pool renders that this API
// server lacks: ipamd's ServiceAccount, ClusterRole and binding, and the
// admission policies with their bindings.
func applyPoolComponent(t *testing.T, env *clusterfixture.Env) {
	t.Helper()
	r, err := deploykube.RenderWith("containerd", "pool")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cs := t.Context(), env.Client
	must := func(what string, err error) {
		if err != nil {
			t.Fatalf("create %s: %v", what, err)
		}
	}
	_, err = cs.CoreV1().ServiceAccounts(r.ServiceAccount.Namespace).Create(ctx, r.ServiceAccount, metav1.CreateOptions{})
	must("ServiceAccount", err)
	_, err = cs.RbacV1().ClusterRoles().Create(ctx, r.ClusterRole, metav1.CreateOptions{})
	must("ClusterRole", err)
	_, err = cs.RbacV1().ClusterRoleBindings().Create(ctx, r.ClusterRoleBinding, metav1.CreateOptions{})
	must("ClusterRoleBinding", err)
	// ipamd's Lease and Events (lease-rbac.yaml): without them the pool
	// source never renews, stays fenced and hands out nothing.
	for i := range r.Roles {
		_, err = cs.RbacV1().Roles(r.Roles[i].Namespace).Create(ctx, &r.Roles[i], metav1.CreateOptions{})
		must("Role "+r.Roles[i].Name, err)
	}
	for i := range r.RoleBindings {
		_, err = cs.RbacV1().RoleBindings(r.RoleBindings[i].Namespace).Create(ctx, &r.RoleBindings[i], metav1.CreateOptions{})
		must("RoleBinding "+r.RoleBindings[i].Name, err)
	}
	if len(r.Policies) != 6 || len(r.PolicyBindings) != 6 {
		t.Fatalf("components/pool renders %d policies and %d bindings, want 6 and 6", len(r.Policies), len(r.PolicyBindings))
	}
	for i := range r.Policies {
		_, err = cs.AdmissionregistrationV1().ValidatingAdmissionPolicies().Create(ctx, &r.Policies[i], metav1.CreateOptions{})
		must("ValidatingAdmissionPolicy "+r.Policies[i].Name, err)
	}
	for i := range r.PolicyBindings {
		_, err = cs.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Create(ctx, &r.PolicyBindings[i], metav1.CreateOptions{})
		must("ValidatingAdmissionPolicyBinding "+r.PolicyBindings[i].Name, err)
	}
}
