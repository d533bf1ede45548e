package daemon_test

import (
	"slices"
	"testing"
)

// static.nodes: the node's own entry, picked by its name, is its pool;
// no Kubernetes API is involved.
func TestStaticNodesServesThisNodesEntry(t *testing.T) {
	n := newNode(t, "198.18.0.0/28")
	n.cfg.IPSource.NodeName = "node-2"
	n.cfg.IPSource.Static.Nodes = map[string][]string{
		"node-1": {"198.18.1.0/29"},
		"node-2": {"198.18.2.0/29", "fd00:2::/125"},
	}
	if err := n.cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	n.addSandbox("sandbox-a")
	_, cni, intro := startInProcess(t, n)
	waitReady(t, cni)
	if got, want := mustAddIPs(t, cni, "sandbox-a"), []string{"198.18.2.1/29", "fd00:2::1/125"}; !slices.Equal(got, want) {
		t.Fatalf("ADD on node-2 = %v, want %v", got, want)
	}
	if got, waiting := poolRanges(t, intro); got != "198.18.2.0/29,fd00:2::/125" || waiting != "" {
		t.Fatalf("pool ranges %q (waiting %q), want node-2's only", got, waiting)
	}
}
