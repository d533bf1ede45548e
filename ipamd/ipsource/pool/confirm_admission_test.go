package pool_test

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/sandboxipam/sandboxipam/cluster/api/ipamdlease"
	"github.com/sandboxipam/sandboxipam/cluster/api/v1alpha1"
	"github.com/sandboxipam/sandboxipam/internal/clusterfixture"
	"github.com/sandboxipam/sandboxipam/internal/kubeenv"
	"github.com/sandboxipam/sandboxipam/internal/testsupport"
	"github.com/sandboxipam/sandboxipam/ipamd/kubeclient"
)

// An operator's confirmation that a node is gone (the reclaimer's
// condition (e), issue 44) is an administrator's word: ipamd's token,
// bound to node A, may neither annotate A's own block with it nor create
// a block that carries it, while an administrator may; a later write by
// A that leaves the administrator's annotation as it is goes through.
func TestNodeTokenCannotConfirmItsNodeGone(t *testing.T) {
	env := clusterfixture.StartWith(t, kubeenv.Options{Dir: t.TempDir(), Authorization: "RBAC"})
	t.Cleanup(env.API.Stop)
	env.InstallPoolCRDs(t)
	env.Pool(t, "default", 26, "198.18.0.0/24")
	a := env.Node(t, "node-a")
	applyPoolComponent(t, env)
	kcA, err := kubeclient.FromConfig(env.BoundToken(t, "kube-system", "sandboxipam", "ipamd-a", a.Name))
	if err != nil {
		t.Fatal(err)
	}
	ctx, asA, admin := t.Context(), kcA.Dynamic.Resource(v1alpha1.IPBlockResource), env.Dynamic.Resource(v1alpha1.IPBlockResource)
	own := env.Block(t, "default", "198.18.0.0/26", a.Name, a.UID)
	const want = "ipamd may not write the annotation sandboxipam.io/confirm-node-gone"
	confirm := func(uid types.UID) []byte {
		return fmt.Appendf(nil, `{"metadata":{"annotations":{%q:%q}}}`, ipamdlease.ConfirmNodeGoneAnnotation, uid)
	}
	// ipamd's RBAC updates, it does not patch: A writes as ipamd would.
	updateAsA := func(change func(u *unstructured.Unstructured)) error {
		u, err := asA.Get(ctx, own.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		change(u)
		_, err = asA.Update(ctx, u, metav1.UpdateOptions{})
		return err
	}
	setConfirm := func(uid types.UID) func(u *unstructured.Unstructured) {
		return func(u *unstructured.Unstructured) {
			ann := u.GetAnnotations()
			if ann == nil {
				ann = map[string]string{}
			}
			ann[ipamdlease.ConfirmNodeGoneAnnotation] = string(uid)
			u.SetAnnotations(ann)
		}
	}
	testsupport.Wait(t, "node A's token refused the confirmation on its own block", func() (bool, string) {
		err := updateAsA(setConfirm(a.UID))
		if err == nil {
			// The policy is not in force yet: take the word back.
			_, _ = admin.Patch(ctx, own.Name, types.MergePatchType, fmt.Appendf(nil, `{"metadata":{"annotations":{%q:null}}}`, ipamdlease.ConfirmNodeGoneAnnotation), metav1.PatchOptions{})
			return false, "accepted"
		}
		return apierrors.IsForbidden(err) && strings.Contains(err.Error(), want), err.Error()
	})
	carrying := v1alpha1.NewBlock("default", netip.MustParsePrefix("198.18.0.64/26"), a.Name, string(a.UID), metav1.Now())
	carrying.Annotations = map[string]string{ipamdlease.ConfirmNodeGoneAnnotation: string(a.UID)}
	if err := createBlock(ctx, asA, carrying); !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), want) {
		t.Errorf("node A's token creating a block carrying the confirmation: %v, want Forbidden: %s", err, want)
	}
	if _, err := admin.Patch(ctx, own.Name, types.MergePatchType, confirm(a.UID), metav1.PatchOptions{}); err != nil {
		t.Fatalf("an administrator confirming node A gone: %v", err)
	}
	if err := updateAsA(setConfirm("another-uid")); !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), want) {
		t.Errorf("node A's token changing the confirmation: %v, want Forbidden: %s", err, want)
	}
	touch := func(u *unstructured.Unstructured) {
		l := u.GetLabels()
		if l == nil {
			l = map[string]string{}
		}
		l["example.com/touched"] = "yes"
		u.SetLabels(l)
	}
	if err := updateAsA(touch); err != nil {
		t.Errorf("node A's token writing its block, the confirmation left as it is: %v", err)
	}
}
