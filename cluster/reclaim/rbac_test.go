package reclaim_test

import (
	"context"
	"slices"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/sandboxipam/sandboxipam/cluster/reclaim"
	deploykube "github.com/sandboxipam/sandboxipam/deploy/kubernetes"
	"github.com/sandboxipam/sandboxipam/internal/clusterfixture"
	"github.com/sandboxipam/sandboxipam/internal/kubeenv"
)

// TestShippedRBACIsEnough runs the reclaimer as the ServiceAccount of
// components/reclaimer, with the component's own ClusterRole, Roles and
// bindings, on an API server that authorizes by RBAC: it takes the leader
// Lease, watches what it watches, reclaims a dead node's block and records
// the Event. The same token may not delete a Node.
func TestShippedRBACIsEnough(t *testing.T) {
	env := clusterfixture.StartWith(t, kubeenv.Options{Dir: t.TempDir(), Authorization: "RBAC"})
	t.Cleanup(env.API.Stop)
	env.InstallPoolCRDs(t)
	env.Pool(t, "default", 26, "198.18.0.0/24")
	ghost := confirmGone(t, env, env.Block(t, "default", "198.18.0.0/26", "ghost", "ghost-uid"))
	victim := env.Node(t, "victim")

	cfg := applyReclaimerRBAC(t, env)
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	rc := reclaim.DefaultConfig()
	rc.Grace, rc.Interval = 2*time.Minute, time.Minute
	clk := clocktesting.NewFakeClock(t0)
	passes := make(chan reclaim.Pass, 16)
	r, err := reclaim.New(reclaim.Clients{Kube: kube, Dynamic: dyn}, reclaim.Options{Config: rc, Identity: "rbac-reclaimer", Clock: clk,
		Logger: newLogger(), OnPass: func(p reclaim.Pass) { passes <- p }})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx, reclaim.Elector{}) }()
	t.Cleanup(func() { cancel(); <-done })
	c := &candidate{r: r, clk: clk, passes: passes}
	if p := c.next(t); len(p.Errors) != 0 || len(p.Decisions) != 1 {
		t.Fatalf("first pass as the ServiceAccount: %+v", p)
	}
	// No ipamd Lease seen: the wait is the longest ipamd accepts (5m),
	// not the grace (ipamdlease.ReclaimWait).
	for range 5 {
		c.step(t)
	}
	if p := c.step(t); !slices.Equal(p.Reclaimed, []string{ghost.Name}) || len(p.Errors) != 0 {
		t.Fatalf("reclaim as the ServiceAccount: %+v", p)
	}
	if evs := events(t, env, ghost); len(evs) != 1 {
		t.Fatalf("%d Events on %s, want 1", len(evs), ghost.Name)
	}
	if rep := r.Check(); rep.Nodes != 1 || rep.Pools != 1 {
		t.Fatalf("the check as the ServiceAccount: %+v", rep)
	}
	if err := kube.CoreV1().Nodes().Delete(t.Context(), victim.Name, metav1.DeleteOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("the reclaimer's token deleting a Node: %v, want Forbidden", err)
	}
}

// applyReclaimerRBAC creates the component's ServiceAccount and RBAC as
// rendered, and returns a client config with a token of that account.
func applyReclaimerRBAC(t *testing.T, env *clusterfixture.Env) *rest.Config {
	t.Helper()
	r, err := deploykube.RenderWith("containerd", "reclaimer")
	if err != nil {
		t.Fatal(err)
	}
	ctx, rc, cs := t.Context(), r.Reclaimer, env.Client
	must := func(what string, err error) {
		if err != nil {
			t.Fatalf("create %s: %v", what, err)
		}
	}
	_, err = cs.CoreV1().ServiceAccounts(rc.ServiceAccount.Namespace).Create(ctx, rc.ServiceAccount, metav1.CreateOptions{})
	must("ServiceAccount", err)
	_, err = cs.RbacV1().ClusterRoles().Create(ctx, rc.ClusterRole, metav1.CreateOptions{})
	must("ClusterRole", err)
	_, err = cs.RbacV1().ClusterRoleBindings().Create(ctx, rc.ClusterRoleBinding, metav1.CreateOptions{})
	must("ClusterRoleBinding", err)
	for i := range rc.Roles {
		_, err = cs.RbacV1().Roles(rc.Roles[i].Namespace).Create(ctx, &rc.Roles[i], metav1.CreateOptions{})
		must("Role "+rc.Roles[i].Name, err)
	}
	for i := range rc.RoleBindings {
		_, err = cs.RbacV1().RoleBindings(rc.RoleBindings[i].Namespace).Create(ctx, &rc.RoleBindings[i], metav1.CreateOptions{})
		must("RoleBinding "+rc.RoleBindings[i].Name, err)
	}
	tok, err := cs.CoreV1().ServiceAccounts(rc.ServiceAccount.Namespace).CreateToken(ctx, rc.ServiceAccount.Name,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}, metav1.CreateOptions{})
	must("token", err)
	cfg := rest.CopyConfig(env.Config)
	cfg.BearerToken = tok.Status.Token
	return cfg
}
