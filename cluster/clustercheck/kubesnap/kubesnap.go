// Package kubesnap reads clustercheck's Snapshot through the Kubernetes
// API with plain paginated lists (IPPools and IPBlocks with the dynamic
// client, Nodes and Pods with the typed one), for `ipamctl check
// --cluster`, which runs once and should leave no watch behind. The
// reclaimer, which runs the same comparison periodically, builds its
// snapshot from its informers' caches instead. CheckNodes also asks every
// node's ipamd what it holds, running `ipamctl pods -o json` in the node's
// ipamd pod through the API server's pods/exec (RemoteExec), as an
// operator does with kubectl exec: a thin adapter, the join is
// clustercheck's.
//
// See docs/architecture.md for where this package sits and the life of an
// ADD, a DEL, a reconcile pass and a restart through the daemon.
package kubesnap

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/pager"

	"github.com/sandboxipam/sandboxipam/cluster/api/v1alpha1"
	"github.com/sandboxipam/sandboxipam/cluster/clustercheck"
)

// pageSize bounds each list response, so a large cluster's pods come in
// pages instead of one response of every pod.
const pageSize = 500

// Result is a comparison and what the reader noted about its input.
type Result struct {
	clustercheck.Report
	// Notes say what could not be compared and why (the pool's resources
	// not installed, say).
	Notes []string `json:"notes,omitempty"`
}

// Check reads the cluster and compares it.
func Check(ctx context.Context, cs kubernetes.Interface, dyn dynamic.Interface) (Result, error) {
	s, notes, err := Read(ctx, cs, dyn)
	if err != nil {
		return Result{}, err
	}
	r := clustercheck.Compare(s)
	return Result{Report: r, Notes: append(notes, unseen(r)...)}, nil
}

// unseen says plainly what the API cannot show: the pods of a node whose
// Node is gone. A node cut off from the API server alone keeps running its
// pods after its Node and Pods are deleted, on its blocks' addresses; the
// comparison sees none of them, so a duplicate there would pass it. Only
// that node's ipamd knows (`ipamctl check` on the node), and the reclaimer
// keeps such blocks while the node answers on the data plane.
func unseen(r clustercheck.Report) []string {
	var nodes []string
	for _, f := range r.Findings {
		if f.Kind == clustercheck.BlockNodeGone && !slices.Contains(nodes, f.Node) {
			nodes = append(nodes, f.Node)
		}
	}
	if len(nodes) == 0 {
		return nil
	}
	return []string{fmt.Sprintf("not seen: pods node %s may still run on its blocks' addresses: its Node is gone from the API, "+
		"and a node cut off from the API server alone keeps its pods after their Pod objects are deleted; "+
		"ask that node's ipamd (ipamctl check on the node) before taking its blocks for gone", strings.Join(nodes, ", "))}
}

// Read lists IPPools, IPBlocks, Nodes and Pods. When the pool's resources
// are not installed (a cluster on the node source), pools and blocks are
// empty and a note says so; any other failure to list is an error, never
// an empty list: an empty list would pass a check it should fail.
func Read(ctx context.Context, cs kubernetes.Interface, dyn dynamic.Interface) (clustercheck.Snapshot, []string, error) {
	var s clustercheck.Snapshot
	var notes []string
	poolsInstalled := true
	for _, r := range []struct {
		res dynamicResource
		add func(*unstructured.Unstructured)
	}{{pools, s.AddPool}, {blocks, s.AddBlock}} {
		err := each(ctx, func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return dyn.Resource(r.res.gvr).List(ctx, o)
		}, func(obj runtime.Object) { r.add(obj.(*unstructured.Unstructured)) })
		if apierrors.IsNotFound(err) {
			poolsInstalled = false
			continue
		}
		if err != nil {
			return s, nil, fmt.Errorf("list %s: %w", r.res.name, err)
		}
	}
	if !poolsInstalled {
		notes = append(notes, "the IPPool and IPBlock resources (sandboxipam.io) are not installed: pods are checked against their nodes' podCIDRs only")
	}
	if err := each(ctx, func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
		return cs.CoreV1().Nodes().List(ctx, o)
	}, func(obj runtime.Object) { s.AddNode(obj.(*corev1.Node)) }); err != nil {
		return s, nil, fmt.Errorf("list Nodes: %w", err)
	}
	if err := each(ctx, func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
		return cs.CoreV1().Pods(metav1.NamespaceAll).List(ctx, o)
	}, func(obj runtime.Object) { s.AddPod(obj.(*corev1.Pod)) }); err != nil {
		return s, nil, fmt.Errorf("list Pods: %w", err)
	}
	return s, notes, nil
}

type dynamicResource struct {
	name string
	gvr  schema.GroupVersionResource
}

var (
	pools  = dynamicResource{"IPPools", v1alpha1.IPPoolResource}
	blocks = dynamicResource{"IPBlocks", v1alpha1.IPBlockResource}
)

// each lists in pages of pageSize, calling fn on every item, from a
// consistent snapshot of the list (the pager falls back to one full list
// when a continue token expires).
func each(ctx context.Context, list pager.ListPageFunc, fn func(runtime.Object)) error {
	p := pager.New(list)
	p.PageSize = pageSize
	return p.EachListItem(ctx, metav1.ListOptions{}, func(obj runtime.Object) error {
		fn(obj)
		return nil
	})
}
