package e2e

import (
	"context"
	"net/netip"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/sandboxipam/sandboxipam/conformance/fixture"
	"github.com/sandboxipam/sandboxipam/internal/scenario"
)

// ipamdView maps sandbox ID -> IP as ipamd's introspection reports it.
func ipamdView(t *testing.T, ctx context.Context, d *scenario.IPAMD) map[string]string {
	t.Helper()
	pods, err := d.Client().Pods(ctx)
	if err != nil {
		t.Fatalf("ipamd /v1/pods: %v", err)
	}
	view := map[string]string{}
	for _, p := range pods.Pods {
		if p.Network != scenario.NetworkName || p.IfName != "eth0" {
			t.Fatalf("assignment %+v: want network %q, ifname eth0", p, scenario.NetworkName)
		}
		view[p.SandboxID] = p.IP
	}
	return view
}

func sameView(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// TestSeedScenarioContainerd is the bug report's scenario with containerd
// calling the CNI plugin for real: pods keep their addresses across a
// SIGKILL of ipamd, a DEL after the restart finds its pod by sandbox ID,
// and a DEL lost while ipamd was down is made good by the reconciler.
func TestSeedScenarioContainerd(t *testing.T) {
	bin := requireNode(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	node, err := scenario.StartNode(ctx, scenario.Options{Dir: shortDir(t, "sbx-e2e-"), BinDir: bin, Grace: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer node.Stop(context.WithoutCancel(ctx))

	// Three pods through CRI: each RunPodSandbox calls our CNI plugin.
	var pods []fixture.Pod
	for i, name := range []string{"web-0", "web-1", "web-2"} {
		pod, err := node.Pods.CreatePod(ctx, fixture.PodSpec{
			Name: name, Namespace: "shop", UID: "uid-" + name, Containers: []string{"app"},
		})
		if err != nil {
			t.Fatalf("create pod %d: %v", i, err)
		}
		pods = append(pods, pod)
	}
	want := map[string]string{}
	for i, pod := range pods {
		// The pool is 198.18.0.0/28: network .0 and broadcast .15 are
		// never handed out, and a fresh pool hands out in order.
		want[pod.SandboxID] = netip.AddrFrom4([4]byte{198, 18, 0, byte(i + 1)}).String()
	}
	assertViews(t, ctx, node, want)
	for _, pod := range pods {
		inside, err := node.AddressInPod(ctx, pod.SandboxID)
		if err != nil {
			t.Fatal(err)
		}
		// The plugin's routing scheme gives the pod its address as a
		// host route (see package cni).
		if inside != want[pod.SandboxID]+"/32" {
			t.Fatalf("pod %s: eth0 has %s inside its netns, want %s/32", pod.Spec.Name, inside, want[pod.SandboxID])
		}
	}

	// SIGKILL ipamd and start it again: nothing is lost.
	if err := node.IPAMD.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := node.IPAMD.Start(ctx); err != nil {
		t.Fatal(err)
	}
	assertViews(t, ctx, node, want)

	// Remove pod 1 through CRI: the runtime's DEL carries the sandbox ID,
	// ipamd finds it (the bug answered "unknown pod" here) and releases.
	if err := node.Pods.RemovePod(ctx, pods[0]); err != nil {
		t.Fatalf("remove pod 1: %v", err)
	}
	delete(want, pods[0].SandboxID)
	assertViews(t, ctx, node, want)

	// Pod 2 goes away while ipamd is down: its DEL fails, so containerd
	// cannot tear it down; it is then removed without its DEL reaching
	// ipamd, as after a force-removal.
	if err := node.IPAMD.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := node.Pods.StopPod(ctx, pods[1]); err == nil {
		t.Fatal("stopping pod 2 with ipamd down succeeded; the CNI DEL should fail so the runtime retries")
	}
	if err := node.LoseDEL(ctx, pods[1]); err != nil {
		t.Fatal(err)
	}
	if err := node.IPAMD.Start(ctx); err != nil {
		t.Fatal(err)
	}
	delete(want, pods[1].SandboxID)
	waitFor(t, 20*time.Second, "the reconciler to release pod 2's address", func() (bool, string) {
		got := ipamdView(t, ctx, node.IPAMD)
		return sameView(got, want), describe(got)
	})
	assertViews(t, ctx, node, want)
	adapter, err := node.IPAMD.Client().Adapter(ctx)
	if err != nil {
		t.Fatal(err)
	}
	pool, err := node.IPAMD.Client().Pool(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if pool.Assigned != 1 || pool.Total != 14 {
		t.Fatalf("pool: %d of %d assigned, want 1 of 14", pool.Assigned, pool.Total)
	}
	if adapter.Runtime.RuntimeName != "containerd" {
		t.Fatalf("adapter reports runtime %q, want containerd", adapter.Runtime.RuntimeName)
	}

	// ipamctl agrees with the runtime on which sandbox holds which address.
	out, err := node.IPAMD.RunCtl(ctx, "pods")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, pods[2].SandboxID) || !strings.Contains(out, want[pods[2].SandboxID]) ||
		strings.Contains(out, pods[0].SandboxID) || strings.Contains(out, pods[1].SandboxID) {
		t.Fatalf("ipamctl pods shows:\n%s\nwant only %s with %s", out, pods[2].SandboxID, want[pods[2].SandboxID])
	}
}

// assertViews checks that ipamd and the runtime agree, exactly, on which
// sandbox holds which address.
func assertViews(t *testing.T, ctx context.Context, node *scenario.Node, want map[string]string) {
	t.Helper()
	got := ipamdView(t, ctx, node.IPAMD)
	if !sameView(got, want) {
		t.Fatalf("ipamd holds %v, want %v", got, want)
	}
	runtimeView, err := node.SandboxIPs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ready := map[string]string{}
	for id, ip := range runtimeView {
		if ip != "" {
			ready[id] = ip
		}
	}
	if !sameView(ready, want) {
		ids := make([]string, 0, len(runtimeView))
		for id := range runtimeView {
			ids = append(ids, id)
		}
		sort.Strings(ids)
		t.Fatalf("runtime reports %v (sandboxes %v), want %v", ready, ids, want)
	}
}
