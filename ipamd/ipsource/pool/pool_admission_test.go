package pool_test

import (
	"context"
	"encoding/json"
	"net/netip"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/sandboxipam/sandboxipam/cluster/api/v1alpha1"
	"github.com/sandboxipam/sandboxipam/internal/clusterfixture"
	"github.com/sandboxipam/sandboxipam/internal/testsupport"
	"github.com/sandboxipam/sandboxipam/ipamd/kubeclient"
)

// A pool's geometry never changes under its blocks, whatever path the
// edit takes (issue 44, paths 1-3): with components/pool's policies on a
// real API server, the operator (an administrator, whom RBAC does not
// stop) is refused deleting a pool with a block, removing its IPv4
// family or the CIDR a block lies in, re-creating a deleted pool at
// another block size over its blocks, and giving a CIDR to another pool
// while a block of it exists; each refusal names the block in the way
// and the node holding it. What stays allowed: adding a CIDR under
// existing blocks, removing a CIDR whose blocks are gone and giving it to
// another pool at another size, and deleting a pool with no blocks.
func TestPoolEditsKeepTheirBlocks(t *testing.T) {
	env := clusterfixture.Start(t, t.TempDir())
	t.Cleanup(env.API.Stop)
	env.InstallPoolCRDs(t)
	ctx := t.Context()
	if err := clusterfixture.CreatePool(ctx, env.Dynamic, "default", 26, 122, "198.18.0.0/24", "fd00:18::/112"); err != nil {
		t.Fatal(err)
	}
	a, b := env.Node(t, "node-a"), env.Node(t, "node-b")
	applyPoolComponent(t, env)
	env.Block(t, "default", "198.18.0.0/26", a.Name, a.UID)
	// A block whose pool was deleted before these policies were in place
	// (or by an administrator who deleted the policies too).
	env.Block(t, "gone", "198.18.4.0/26", b.Name, b.UID)
	pools := env.Dynamic.Resource(v1alpha1.IPPoolResource)
	held := "IPBlock 198.18.0.0-26 (198.18.0.0/26 of IPPool default) held by node node-a"
	orphan := "IPBlock 198.18.4.0-26 (198.18.4.0/26 of IPPool gone) held by node node-b"
	keep := "IPPool default must keep each of its blocks inside its CIDRs or retiringCIDRs at its block size while the block exists (move a CIDR to retiringCIDRs to retire it): " + held

	// Path 1: delete and re-create at another size.
	refused(t, "deleting IPPool default", deletePool(ctx, pools, "default"),
		"IPPool default cannot be deleted while its blocks exist: "+held)
	refused(t, "re-creating IPPool gone at /24 over its /26 block", createPool(ctx, pools, "gone", `{"ipv4":{"cidrs":["198.18.4.0/24"],"blockSize":24}}`),
		"IPPool gone must keep each of its blocks inside its CIDRs or retiringCIDRs at its block size while the block exists (move a CIDR to retiringCIDRs to retire it): "+orphan)
	refused(t, "creating IPPool other over pool gone's block", createPool(ctx, pools, "other", `{"ipv4":{"cidrs":["198.18.4.0/22"],"blockSize":24}}`),
		"IPPool other may not take a CIDR overlapping a block of another pool: "+orphan)
	// Path 2: a family removed (to be added back at another size).
	refused(t, "removing spec.ipv4 of IPPool default", patchPool(ctx, pools, "default", types.JSONPatchType, `[{"op":"remove","path":"/spec/ipv4"}]`), keep)
	// Path 3: a CIDR removed from one pool and given to another.
	refused(t, "removing 198.18.0.0/24 from IPPool default", patchPool(ctx, pools, "default", types.MergePatchType, `{"spec":{"ipv4":{"cidrs":["198.18.1.0/24"]}}}`), keep)
	refused(t, "giving 198.18.0.0/24 to IPPool b", createPool(ctx, pools, "b", `{"ipv4":{"cidrs":["198.18.0.0/24"],"blockSize":24}}`),
		"IPPool b may not take a CIDR overlapping a block of another pool: "+held)

	// Still allowed: a CIDR added under the blocks; a CIDR retired with its
	// blocks in it (moved to retiringCIDRs: nothing is claimed there, its
	// blocks drain and stay the pool's); once the block is gone the CIDR
	// leaves, moves to another pool at another size, and a pool with no
	// blocks is deleted.
	accepted(t, "adding 198.18.1.0/24 to IPPool default", patchPool(ctx, pools, "default", types.MergePatchType, `{"spec":{"ipv4":{"cidrs":["198.18.0.0/24","198.18.1.0/24"]}}}`))
	both := patchPool(ctx, pools, "default", types.MergePatchType, `{"spec":{"ipv4":{"cidrs":["198.18.0.0/24","198.18.1.0/24"],"retiringCIDRs":["198.18.0.0/24"]}}}`)
	if err := both(false); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "a CIDR is either in cidrs (blocks are claimed from it) or in retiringCIDRs (its blocks drain), not both") {
		t.Fatalf("a CIDR both claimed from and retiring: %v, want the CRD's refusal", err)
	}
	accepted(t, "retiring 198.18.0.0/24 of IPPool default under its block", patchPool(ctx, pools, "default", types.MergePatchType,
		`{"spec":{"ipv4":{"cidrs":["198.18.1.0/24"],"retiringCIDRs":["198.18.0.0/24"]}}}`))
	asA, err := kubeclient.FromConfig(env.BoundToken(t, "kube-system", "sandboxipam", "ipamd-a", a.Name))
	if err != nil {
		t.Fatal(err)
	}
	claim := v1alpha1.NewBlock("default", netip.MustParsePrefix("198.18.0.64/26"), a.Name, string(a.UID), metav1.Now())
	waitRefused(t, ctx, env.Dynamic.Resource(v1alpha1.IPBlockResource), "a claim in a retiring CIDR",
		func() error { return createBlock(ctx, asA.Dynamic.Resource(v1alpha1.IPBlockResource), claim) },
		"IPBlock 198.18.0.64/26 is not a block of IPPool default (inside one of its CIDRs, at its block size)")
	refused(t, "giving the draining 198.18.0.0/24 to IPPool b", createPool(ctx, pools, "b", `{"ipv4":{"cidrs":["198.18.0.0/24"],"blockSize":24}}`),
		"IPPool b may not take a CIDR overlapping a block of another pool: "+held)
	refused(t, "removing the draining 198.18.0.0/24 from IPPool default", patchPool(ctx, pools, "default", types.MergePatchType,
		`{"spec":{"ipv4":{"cidrs":["198.18.1.0/24"],"retiringCIDRs":null}}}`), keep)
	if err := env.Dynamic.Resource(v1alpha1.IPBlockResource).Delete(ctx, "198.18.0.0-26", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	accepted(t, "removing the drained 198.18.0.0/24 from IPPool default", patchPool(ctx, pools, "default", types.MergePatchType, `{"spec":{"ipv4":{"cidrs":["198.18.1.0/24"],"retiringCIDRs":null}}}`))
	accepted(t, "giving the drained 198.18.0.0/24 to IPPool b at /24", createPool(ctx, pools, "b", `{"ipv4":{"cidrs":["198.18.0.0/24"],"blockSize":24}}`))
	accepted(t, "deleting IPPool b, which has no blocks", deletePool(ctx, pools, "b"))
	accepted(t, "deleting IPPool default, whose blocks are gone", deletePool(ctx, pools, "default"))
}

// An edit of the API server's, tried as a dry run (admission judges it,
// nothing is stored) or for real.
type edit func(dryRun bool) error

func dry(dryRun bool) []string {
	if dryRun {
		return []string{metav1.DryRunAll}
	}
	return nil
}

func deletePool(ctx context.Context, pools dynamic.ResourceInterface, name string) edit {
	return func(dryRun bool) error { return pools.Delete(ctx, name, metav1.DeleteOptions{DryRun: dry(dryRun)}) }
}

func createPool(ctx context.Context, pools dynamic.ResourceInterface, name, spec string) edit {
	return func(dryRun bool) error {
		_, err := pools.Create(ctx, poolObject(name, spec), metav1.CreateOptions{DryRun: dry(dryRun)})
		return err
	}
}

func patchPool(ctx context.Context, pools dynamic.ResourceInterface, name string, pt types.PatchType, patch string) edit {
	return func(dryRun bool) error {
		_, err := pools.Patch(ctx, name, pt, []byte(patch), metav1.PatchOptions{DryRun: dry(dryRun)})
		return err
	}
}

// refused waits until the API server refuses e as a dry run with want
// (the policy and the IPBlocks it judges by reach the API server's caches
// a moment after they are created), then asserts that the edit itself is
// refused with exactly that message.
func refused(t *testing.T, what string, e edit, want string) {
	t.Helper()
	testsupport.Wait(t, "the API server to refuse "+what, func() (bool, string) {
		err := e(true)
		return isRefusal(err, want), errString(err)
	})
	if err := e(false); !isRefusal(err, want) {
		t.Fatalf("%s: %v, want Forbidden: %s", what, err, want)
	}
}

// accepted waits until the API server accepts e as a dry run (a deleted
// IPBlock leaves its informer a moment later), then makes the edit.
func accepted(t *testing.T, what string, e edit) {
	t.Helper()
	testsupport.Wait(t, "the API server to accept "+what, func() (bool, string) {
		err := e(true)
		return err == nil, errString(err)
	})
	if err := e(false); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// isRefusal: err is the Forbidden of a ValidatingAdmissionPolicy whose
// message ends in want (the API server prefixes the policy and binding).
func isRefusal(err error, want string) bool {
	return apierrors.IsForbidden(err) && strings.HasSuffix(err.Error(), ": "+want)
}

// poolObject is IPPool name with spec given in JSON.
func poolObject(name, spec string) *unstructured.Unstructured {
	var s map[string]any
	if err := json.Unmarshal([]byte(spec), &s); err != nil {
		panic(err)
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": v1alpha1.Group + "/" + v1alpha1.Version, "kind": v1alpha1.IPPoolKind,
		"metadata": map[string]any{"name": name}, "spec": s,
	}}
}

func errString(err error) string {
	if err == nil {
		return "accepted"
	}
	return err.Error()
}
