package compat_test

import (
	"testing"
)

// The addresses the pool hands out, in order: ipamd hands out the address
// after the last one it handed out in each family (the checkpoint's
// cursors). A release that lost the cursors on reading the other's
// checkpoint hands out another address than these, and the exact
// comparison fails.
var (
	addrA = []string{"198.18.10.1/28", "fd00:10::1/120"}
	addrB = []string{"198.18.10.2/28", "fd00:10::2/120"}
	addrC = []string{"198.18.10.3/28", "fd00:10::3/120"}
	addrD = []string{"198.18.10.4/28", "fd00:10::4/120"}
	addrE = []string{"198.18.10.5/28", "fd00:10::5/120"}
)

// TestCheckpointForwardAndBack: an upgrade, then a rollback, then the
// upgrade again, over one state directory. Each release's ipamd starts on
// what the other wrote, trusts it (loaded, not corrupt, not rebuilt), holds
// exactly the assignments it held (sandbox IDs and both families'
// addresses), keeps a released address cooling, answers CHECK for a pod
// the other ADDed, a DEL for it, and an ADD.
func TestCheckpointForwardAndBack(t *testing.T) {
	prev, cur := previousBuild(t), currentBuild(t)
	n := newNode(t)
	n.dumpOnFailure()

	// This release writes: three pods, one released by an answered DEL.
	r := n.start(cur, false)
	resA := n.add(cur, "pod-a", addrA...)
	n.add(cur, "pod-b", addrB...)
	resC := n.add(cur, "pod-c", addrC...)
	n.del(cur, "pod-b")
	r.requirePods(map[string][]string{"pod-a": addrs(addrA...), "pod-c": addrs(addrC...)})
	r.stop()

	// Rollback: the previous release reads it.
	r = n.start(prev, true)
	r.requireLoaded(2, 2) // pod-b's two addresses cool
	r.requirePods(map[string][]string{"pod-a": addrs(addrA...), "pod-c": addrs(addrC...)})
	n.check(prev, "pod-a", resA)
	n.check(prev, "pod-c", resC)
	n.del(prev, "pod-c")
	// The next addresses after the last handed out (pod-c's) are pod-d's.
	resD := n.add(prev, "pod-d", addrD...)
	r.requirePods(map[string][]string{"pod-a": addrs(addrA...), "pod-d": addrs(addrD...)})
	r.stop()

	// Upgrade again: this release reads what the previous one wrote.
	r = n.start(cur, true)
	r.requireLoaded(2, 4) // pod-b's and pod-c's
	r.requirePods(map[string][]string{"pod-a": addrs(addrA...), "pod-d": addrs(addrD...)})
	n.check(cur, "pod-a", resA)
	n.check(cur, "pod-d", resD)
	n.del(cur, "pod-a")
	n.add(cur, "pod-e", addrE...)
	r.requirePods(map[string][]string{"pod-d": addrs(addrD...), "pod-e": addrs(addrE...)})
	r.stop()
}
