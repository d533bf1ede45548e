package kubernetes

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	deploy "github.com/sandboxipam/sandboxipam/deploy/kubernetes"
)

// apiObject is one object to create, and the collection it goes to.
type apiObject struct {
	path string
	obj  any
}

// renderClusterManifests renders the containerd overlay with the routes
// component, as "kubectl apply -k" would, with the image set to the one
// the nodes imported ("kustomize edit set image"); nothing else changes.
func renderClusterManifests(t *testing.T) []apiObject {
	t.Helper()
	r, err := deploy.Render("containerd")
	if err != nil {
		t.Fatal(err)
	}
	ds := r.DaemonSet.DeepCopy()
	spec := &ds.Spec.Template.Spec
	for i := range spec.InitContainers {
		spec.InitContainers[i].Image = e2eImageRef
	}
	for i := range spec.Containers {
		spec.Containers[i].Image = e2eImageRef
	}
	r.ServiceAccount.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"}
	r.ConfigMap.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}
	ds.TypeMeta = metav1.TypeMeta{APIVersion: "apps/v1", Kind: "DaemonSet"}
	ns := ds.Namespace
	return []apiObject{
		{"/api/v1/namespaces/" + ns + "/serviceaccounts", r.ServiceAccount},
		{"/api/v1/namespaces/" + ns + "/configmaps", r.ConfigMap},
		{"/apis/apps/v1/namespaces/" + ns + "/daemonsets", ds},
	}
}
