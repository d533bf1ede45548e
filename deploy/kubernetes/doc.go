// Package kubernetes holds sandboxipam's Kubernetes manifests (a kustomize
// base whose pool is each Node's spec.podCIDRs, one overlay per runtime:
// containerd, crio, cri-dockerd, aws, the one-node static overlay
// static-one-node, and the Components routes and pool, the cluster pool
// with its CRDs under crds/)
// and renders them with kustomize's Go API into typed k8s.io/api objects,
// decoded strictly: a misspelled or unknown field is an error, not a
// field the API server would silently drop.
//
// The render test checks every overlay, and the e2e-kubernetes suite runs
// ipamd as a static pod made from the rendered DaemonSet's own pod
// template, so there is no second copy of the pod spec to drift.
package kubernetes
