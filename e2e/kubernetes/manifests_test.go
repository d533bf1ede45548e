package kubernetes

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	deploy "github.com/sandboxipam/sandboxipam/deploy/kubernetes"
)

// oneNodeOverlay is what the one-node tests apply: a static pool, as the
// docs/cluster.md says for a cluster of one node. Two of them (the standalone
// kubelet, the image under ctr) have no API server at all to read a
// Node's podCIDRs from; the one-node cluster applies the overlay the
// docs/cluster.md names for it. The base (the node source) runs on three nodes.
const oneNodeOverlay = "static-one-node"

// apiObject is one object to create, and the collection it goes to.
type apiObject struct {
	path string
	obj  any
}

// manifestObjects are r's objects in the order "kubectl apply" creates
// them, with their API paths.
func manifestObjects(r deploy.Rendered) []apiObject {
	r.ServiceAccount.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"}
	r.ClusterRole.TypeMeta = metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole"}
	r.ClusterRoleBinding.TypeMeta = metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRoleBinding"}
	r.ConfigMap.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}
	r.DaemonSet.TypeMeta = metav1.TypeMeta{APIVersion: "apps/v1", Kind: "DaemonSet"}
	ns := r.DaemonSet.Namespace
	out := []apiObject{
		{"/api/v1/namespaces/" + ns + "/serviceaccounts", r.ServiceAccount},
		{"/apis/rbac.authorization.k8s.io/v1/clusterroles", r.ClusterRole},
		{"/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", r.ClusterRoleBinding},
	}
	// components/pool's grants: ipamd's own Lease and its Events.
	rbac := metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1"}
	for i := range r.Roles {
		r.Roles[i].TypeMeta, r.Roles[i].Kind = rbac, "Role"
		out = append(out, apiObject{"/apis/rbac.authorization.k8s.io/v1/namespaces/" + r.Roles[i].Namespace + "/roles", &r.Roles[i]})
	}
	for i := range r.RoleBindings {
		r.RoleBindings[i].TypeMeta, r.RoleBindings[i].Kind = rbac, "RoleBinding"
		out = append(out, apiObject{"/apis/rbac.authorization.k8s.io/v1/namespaces/" + r.RoleBindings[i].Namespace + "/rolebindings", &r.RoleBindings[i]})
	}
	return append(out,
		apiObject{"/api/v1/namespaces/" + ns + "/configmaps", r.ConfigMap},
		apiObject{"/apis/apps/v1/namespaces/" + ns + "/daemonsets", r.DaemonSet})
}

// policyObjects are components/pool's admission policies and their
// bindings, with their API paths; none without it. They are applied as an
// operator applies them: every ipamd's IPBlock, Lease and Event write,
// with the token its kubelet projects, goes through them.
func policyObjects(r deploy.Rendered) []apiObject {
	const base = "/apis/admissionregistration.k8s.io/v1/"
	tm := metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1"}
	var out []apiObject
	for i := range r.Policies {
		r.Policies[i].TypeMeta, r.Policies[i].Kind = tm, "ValidatingAdmissionPolicy"
		out = append(out, apiObject{base + "validatingadmissionpolicies", &r.Policies[i]})
	}
	for i := range r.PolicyBindings {
		r.PolicyBindings[i].TypeMeta, r.PolicyBindings[i].Kind = tm, "ValidatingAdmissionPolicyBinding"
		out = append(out, apiObject{base + "validatingadmissionpolicybindings", &r.PolicyBindings[i]})
	}
	return out
}

// reclaimerObjects are components/reclaimer's objects in the order
// "kubectl apply" creates them, with their API paths; none without it.
func reclaimerObjects(r deploy.Rendered) []apiObject {
	rc := r.Reclaimer
	if rc == nil {
		return nil
	}
	rbac := metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1"}
	rc.ServiceAccount.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"}
	rc.ClusterRole.TypeMeta, rc.ClusterRole.Kind = rbac, "ClusterRole"
	rc.ClusterRoleBinding.TypeMeta, rc.ClusterRoleBinding.Kind = rbac, "ClusterRoleBinding"
	rc.Deployment.TypeMeta = metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"}
	out := []apiObject{
		{"/api/v1/namespaces/" + rc.ServiceAccount.Namespace + "/serviceaccounts", rc.ServiceAccount},
		{"/apis/rbac.authorization.k8s.io/v1/clusterroles", rc.ClusterRole},
		{"/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", rc.ClusterRoleBinding},
	}
	for i := range rc.Roles {
		rc.Roles[i].TypeMeta, rc.Roles[i].Kind = rbac, "Role"
		out = append(out, apiObject{"/apis/rbac.authorization.k8s.io/v1/namespaces/" + rc.Roles[i].Namespace + "/roles", &rc.Roles[i]})
	}
	for i := range rc.RoleBindings {
		rc.RoleBindings[i].TypeMeta, rc.RoleBindings[i].Kind = rbac, "RoleBinding"
		out = append(out, apiObject{"/apis/rbac.authorization.k8s.io/v1/namespaces/" + rc.RoleBindings[i].Namespace + "/rolebindings", &rc.RoleBindings[i]})
	}
	return append(out, apiObject{"/apis/apps/v1/namespaces/" + rc.Deployment.Namespace + "/deployments", rc.Deployment})
}

// renderClusterManifestsWith renders the containerd overlay with the
// routes component, as "kubectl apply -k" of a kustomization naming both
// would, with the image set to the one the nodes imported ("kustomize
// edit set image") and edit applied to the DaemonSet, as an overlay's
// patch would; a nil edit changes nothing else.
func renderClusterManifestsWith(t *testing.T, edit func(*appsv1.DaemonSet)) []apiObject {
	t.Helper()
	r, err := deploy.RenderWith("containerd", "routes")
	if err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		edit(r.DaemonSet)
	}
	spec := &r.DaemonSet.Spec.Template.Spec
	for i := range spec.InitContainers {
		spec.InitContainers[i].Image = e2eImageRef
	}
	for i := range spec.Containers {
		spec.Containers[i].Image = e2eImageRef
	}
	return manifestObjects(r)
}
