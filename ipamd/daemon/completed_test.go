package daemon_test

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/sandboxipam/sandboxipam/ipamd/introspect/client"
	"github.com/sandboxipam/sandboxipam/runtime"
)

// The scenario, with the real ipamd binary and the test adapter
// playing CRI-O 1.34, which keeps reporting a stopped sandbox's address
// after its CNI DEL: a /29 static pool (six addresses), six pods, one
// completes (its DEL answered, its sandbox NotReady and still reporting
// 198.18.77.2), ipamd SIGKILLed right after the DEL and restarted. The
// report is stale after the restart as it was before: nothing is
// quarantined, /v1/pool's groups, families and totals all say free 1,
// and the next ADD gets the freed address. Before the answered DEL was
// part of the checkpoint, the pass after the restart quarantined .2 and
// the ADD failed "address pool exhausted".
func TestCompletedPodOnCRIOFreesItsAddressAcrossARestart(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real ipamd binary; skipped with -short")
	}
	n := newNode(t, "198.18.77.0/29")
	port := n.reserveIntrospection()
	bin, cfgPath, logPath := buildIpamd(t), n.writeConfig(), filepath.Join(n.dir, "ipamd.log")
	cni, intro := cniClient{socket: n.cfg.Socket}, client.NewAdmin(n.cfg.AdminSocketPath())
	p := startOnPort(t, port, bin, cfgPath, logPath, cni, intro)
	for i := 1; i <= 6; i++ {
		id := fmt.Sprintf("pod-%d", i)
		n.addSandbox(id)
		want := fmt.Sprintf("198.18.77.%d", i)
		if got, err := cni.add(t.Context(), id); err != nil || got != want+"/29" {
			t.Fatalf("ADD %s = %q, %v; want %s/29", id, got, err, want)
		}
		n.setSandboxIP(id, want)
	}
	// pod-2 is a Job's pod that completed: kubelet stops its sandbox and
	// the DEL comes; CRI-O keeps listing it NotReady with its address.
	n.setSandboxState("pod-2", runtime.StateNotReady)
	if released, err := cni.del(t.Context(), "pod-2"); err != nil || !released {
		t.Fatalf("DEL pod-2 = %v, %v; want released", released, err)
	}
	p.kill()
	p = startOnPort(t, port, bin, cfgPath, logPath, cni, intro)
	mustReconcile(t, intro, 6) // a pass after the restart, whatever start did
	pool := mustPool(t, intro)
	if pool.Free != 1 || pool.Proof.Quarantined != 0 || len(pool.Groups) != 1 || len(pool.Families) != 1 ||
		pool.Groups[0].Free != 1 || pool.Families[0].Free != 1 || pool.Families[0].Quarantined != 0 {
		t.Fatalf("/v1/pool after the restart = %+v; want free 1 everywhere, nothing quarantined\n%s", pool, p.logAbout("quarantin"))
	}
	if got, err := cni.add(t.Context(), "pod-7"); err != nil || got != "198.18.77.2/29" {
		t.Fatalf("ADD pod-7 after the restart = %q, %v; want 198.18.77.2/29, the completed pod's\n%s", got, err, p.logTail())
	}
}

// setSandboxState sets a sandbox's state, as the runtime does when it
// stops one (a completed pod's sandbox is NotReady, not removed).
func (n *node) setSandboxState(id string, st runtime.SandboxState) {
	n.mu.Lock()
	sb := n.sandboxes[id]
	sb.State = st
	n.sandboxes[id] = sb
	n.mu.Unlock()
	n.writeState()
}
