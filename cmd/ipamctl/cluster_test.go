package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sandboxipam/sandboxipam/cluster/clustercheck"
	"github.com/sandboxipam/sandboxipam/cluster/clustercheck/kubesnap"
	"github.com/sandboxipam/sandboxipam/internal/clusterfixture"
	"github.com/sandboxipam/sandboxipam/internal/testsupport"
)

// TestCheckClusterAgainstARealAPIServer builds a cluster's objects in a
// real kube-apiserver (Nodes, Pods whose status.podIPs are set through the
// status subresource, an IPPool and IPBlocks of the CRDs operators apply),
// checks that `ipamctl check --cluster` passes it, then makes a duplicate
// by hand and checks that it fails, naming both pods.
func TestCheckClusterAgainstARealAPIServer(t *testing.T) {
	env := clusterfixture.Start(t, t.TempDir())
	t.Cleanup(env.API.Stop)
	kc := env.API.Kubeconfig
	n1, n2 := env.Node(t, "n1"), env.Node(t, "n2")
	env.Node(t, "n3", "198.18.9.0/24")
	env.Pod(t, "prod", "web-3", "n3", "198.18.9.5")

	// Before the CRDs exist: a node-source cluster, checked on podCIDRs.
	// What the nodes hold is TestCheckClusterFromNodesAgainstARealAPIServer's:
	// here no kubelet runs, so no node could be asked.
	out, code := runCheck(t, "check", "--cluster", "--from-nodes=false", "--kubeconfig", kc)
	if code != 0 || !strings.Contains(out, "the cluster's pools, blocks, nodes and pods agree: 0 pool(s), 0 block(s), 3 node(s), 1 pod(s) holding 1 address(es) compared") ||
		!strings.Contains(out, "note: the IPPool and IPBlock resources (sandboxipam.io) are not installed") {
		t.Fatalf("check --cluster without CRDs: exit %d\n%s", code, out)
	}

	env.InstallPoolCRDs(t)
	env.Pool(t, "default", 26, "198.18.0.0/24")
	env.Block(t, "default", "198.18.0.0/26", "n1", n1.UID)
	env.Block(t, "default", "198.18.0.64/26", "n2", n2.UID)
	env.Pod(t, "prod", "web-1", "n1", "198.18.0.2")
	env.Pod(t, "prod", "web-2", "n2", "198.18.0.66")
	env.PodIn(t, "batch", "done", "n2", corev1.PodSucceeded, false, "198.18.0.2")
	env.PodIn(t, "kube-system", "proxy-1", "n1", corev1.PodRunning, true, "198.18.100.1")
	env.PodIn(t, "kube-system", "proxy-2", "n2", corev1.PodRunning, true, "198.18.100.1")
	out, code = runCheck(t, "check", "--cluster", "--from-nodes=false", "--kubeconfig", kc)
	if code != 0 || !strings.Contains(out, "agree: 1 pool(s), 2 block(s), 3 node(s), 6 pod(s) holding 3 address(es) compared") ||
		strings.Count(out, "note:") != 1 || !strings.Contains(out, "note: "+notAsked+"\n") {
		t.Fatalf("check --cluster of a healthy cluster: exit %d\n%s", code, out)
	}

	// The duplicate, made by hand: a pod on n2 with web-1's address.
	env.Pod(t, "default", "dup", "n2", "198.18.0.2")
	out, code = runCheck(t, "check", "--cluster", "--from-nodes=false", "--kubeconfig", kc)
	for _, line := range []string{
		"duplicate-address    198.18.0.2 is held by 2 pods: default/dup (node n2), prod/web-1 (node n1)\n",
		"pod-outside-node     pod default/dup on node n2 holds 198.18.0.2, outside its node's blocks (198.18.0.64/26) and podCIDRs (none)\n",
		"2 finding(s): 1 pool(s), 2 block(s), 3 node(s), 7 pod(s) holding 3 address(es) compared\n",
	} {
		if code != 1 || !strings.Contains(out, line) {
			t.Fatalf("check --cluster with a duplicate: exit %d, want 1 and %q:\n%s", code, line, out)
		}
	}

	// A deleted node's blocks, in JSON.
	env.DeleteNode(t, "n1")
	var stdout, stderr bytes.Buffer
	code = run([]string{"check", "--cluster", "-o", "json", "--from-nodes=false", "--kubeconfig", kc}, &stdout, &stderr)
	out = stdout.String()
	if !strings.Contains(stderr.String(), "ipamctl: findings in the cluster: 3, 1 of them duplicate addresses") {
		t.Errorf("stderr %q", stderr.String())
	}
	var r kubesnap.Result
	if err := json.Unmarshal([]byte(out), &r); err != nil || code != 1 {
		t.Fatalf("check --cluster -o json: exit %d, %v\n%s", code, err, out)
	}
	var kinds []clustercheck.Kind
	for _, f := range r.Findings {
		kinds = append(kinds, f.Kind)
	}
	// web-1 stays in range: n1's block outlives n1 until it is reclaimed.
	want := []clustercheck.Kind{clustercheck.DuplicateAddress, clustercheck.PodOutsideNode, clustercheck.BlockNodeGone}
	if !slices.Equal(kinds, want) || r.Findings[0].Address != "198.18.0.2" || !slices.Equal(r.Findings[0].Pods, []string{"default/dup", "prod/web-1"}) ||
		r.Findings[2].Words != "block 198.18.0.0-26 (198.18.0.0/26) is claimed by node n1 (UID "+string(n1.UID)+"), which does not exist" || r.Nodes != 2 {
		t.Fatalf("check --cluster -o json after deleting n1: %+v", r)
	}
	// What the API cannot show is said plainly: n1's pods, if it still runs.
	if len(r.Notes) != 2 || !strings.HasPrefix(r.Notes[0], "not seen: pods node n1 may still run on its blocks' addresses: its Node is gone from the API") ||
		r.Notes[1] != notAsked || r.FromNodes || len(r.NotCompared) != 0 {
		t.Fatalf("notes after deleting n1 = %q, want one naming what n1 may still run, and %q", r.Notes, notAsked)
	}
}

// notAsked is the note of check --cluster --from-nodes=false.
const notAsked = "what each node's ipamd holds was not asked (--from-nodes=false): an address a node still gives out to a pod the API no longer shows is not seen"

// TestCheckClusterFromNodesAgainstARealAPIServer runs check --cluster as
// shipped (asking every node's ipamd) against a real kube-apiserver with
// no kubelet: n1 has a running ipamd pod (made by hand, its status set as
// a kubelet would), which the API server cannot exec in; n2 and n3 have
// none. Each is named NOT COMPARED, first, with its reason, and the check
// exits 3. Then n3's Node is deleted while its block stays: that is a
// finding (exit 1, which wins), and n3 is named as out of reach.
func TestCheckClusterFromNodesAgainstARealAPIServer(t *testing.T) {
	env := clusterfixture.Start(t, t.TempDir())
	t.Cleanup(env.API.Stop)
	kc := env.API.Kubeconfig
	n1, n3 := env.Node(t, "n1"), env.Node(t, "n3")
	env.Node(t, "n2")
	env.InstallPoolCRDs(t)
	env.Pool(t, "default", 26, "198.18.0.0/24")
	env.Block(t, "default", "198.18.0.0/26", "n1", n1.UID)
	env.Block(t, "default", "198.18.0.128/26", "n3", n3.UID)
	env.Pod(t, "prod", "web-1", "n1", "198.18.0.2")
	// A hostNetwork pod of kube-system: it makes the namespace's
	// ServiceAccount, and holds no pod address.
	env.PodIn(t, "kube-system", "proxy-n2", "n2", corev1.PodRunning, true, "198.18.100.2")
	ipamdPod(t, env, "sandboxipam-n1", "n1")

	execFailed := "NOT COMPARED: node n1: ipamctl pods -o json in pod kube-system/sandboxipam-n1 (container ipamd): exec: "
	noPod := func(node string) string {
		return "NOT COMPARED: node " + node + ": no running ipamd pod on it (label app.kubernetes.io/name=sandboxipam, container ipamd)"
	}
	out, code := runCheck(t, "check", "--cluster", "--kubeconfig", kc)
	lines := strings.Split(out, "\n")
	if code != 3 || len(lines) < 5 || !strings.HasPrefix(lines[0], execFailed) || lines[1] != noPod("n2") || lines[2] != noPod("n3") ||
		lines[3] != "INCOMPLETE, no finding in what was compared: 1 pool(s), 2 block(s), 3 node(s), 3 pod(s) holding 1 address(es); the ipamds of 0 node(s) holding 0 address(es) compared" ||
		!strings.Contains(out, "ipamctl: check incomplete: no finding in what was compared, but the ipamd of 3 node(s) not compared") {
		t.Fatalf("check --cluster, no node's ipamd readable: exit %d, want 3 and each node NOT COMPARED first:\n%s", code, out)
	}
	t.Logf("n1's exec, as the API server refuses it without a kubelet: %s", strings.TrimPrefix(lines[0], execFailed))

	env.DeleteNode(t, "n3")
	out, code = runCheck(t, "check", "--cluster", "--kubeconfig", kc)
	lines = strings.Split(out, "\n")
	if code != 1 || len(lines) < 5 || !strings.HasPrefix(lines[0], execFailed) || lines[1] != noPod("n2") ||
		lines[2] != "NOT COMPARED: node n3: its Node is gone from the API, so its ipamd cannot be reached through the API server; "+
			"if the machine still runs (cut off from the API server alone), its pods may still hold addresses of its blocks (198.18.0.128/26): ask it on the node (ipamctl check, ipamctl pods)" ||
		lines[3] != "block-node-gone      block 198.18.0.128-26 (198.18.0.128/26) is claimed by node n3 (UID "+string(n3.UID)+"), which does not exist" ||
		lines[4] != "1 finding(s): 1 pool(s), 2 block(s), 2 node(s), 3 pod(s) holding 1 address(es); the ipamds of 0 node(s) holding 0 address(es) compared" {
		t.Fatalf("check --cluster with n3's Node gone: exit %d, want 1, n3 named out of reach:\n%s", code, out)
	}
}

// ipamdPod makes a running ipamd pod on node by hand, with the
// DaemonSet's label and its container's status set as a kubelet would.
func ipamdPod(t *testing.T, env *clusterfixture.Env, name, node string) {
	t.Helper()
	ctx := context.Background()
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: name, Labels: map[string]string{"app.kubernetes.io/name": "sandboxipam"}},
		Spec: corev1.PodSpec{NodeName: node, HostNetwork: true, AutomountServiceAccountToken: new(bool),
			Containers: []corev1.Container{{Name: "ipamd", Image: "localhost/sandboxipam:test"}}},
	}
	got, err := env.Client.CoreV1().Pods("kube-system").Create(ctx, p, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got.Status.Phase = corev1.PodRunning
	got.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "ipamd", Image: "localhost/sandboxipam:test", Ready: true,
		State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.Now()}}}}
	if _, err := env.Client.CoreV1().Pods("kube-system").UpdateStatus(ctx, got, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func TestCheckClusterUsage(t *testing.T) {
	for _, args := range [][]string{{"check", "--kubeconfig", "x"}, {"check", "--from-nodes=false"}, {"check", "--cluster", "extra"}, {"check", "--bogus"}} {
		if _, code := runCheck(t, args...); code != 2 {
			t.Errorf("%q: exit %d, want 2", args, code)
		}
	}
	// -o after the command is the global flag (the help's own example);
	// the command line is accepted, so only the kubeconfig fails, exit 1.
	for _, args := range [][]string{
		{"check", "--cluster", "--kubeconfig", "/nonexistent/kubeconfig"},
		{"check", "--cluster", "-o", "json", "--kubeconfig", "/nonexistent/kubeconfig"},
	} {
		out, code := runCheck(t, args...)
		if code != 1 || !strings.Contains(out, "--kubeconfig /nonexistent/kubeconfig") {
			t.Errorf("%q, a missing kubeconfig: exit %d\n%s", args, code, out)
		}
	}
	// An API server that cannot be read fails the check; it never passes
	// on empty lists.
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	// A loopback port nothing listens on: connections are refused.
	closed := testsupport.ReservePort(t)
	closed.Release()
	config := fmt.Sprintf("apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: https://%s\n    insecure-skip-tls-verify: true\n"+
		"users:\n- name: u\n  user:\n    token: x\ncontexts:\n- name: c\n  context:\n    cluster: c\n    user: u\ncurrent-context: c\n", closed.Addr)
	if err := os.WriteFile(kc, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	out, code := runCheck(t, "--timeout", "20s", "check", "--cluster", "--kubeconfig", kc)
	if code != 1 || !strings.Contains(out, "ipamctl: list IPPools: ") || strings.Contains(out, "agree") {
		t.Errorf("an unreachable API server: exit %d\n%s", code, out)
	}
}

func runCheck(t *testing.T, args ...string) (string, int) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(args, &stdout, &stderr)
	return stdout.String() + stderr.String(), code
}
