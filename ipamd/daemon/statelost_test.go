package daemon_test

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sandboxipam/sandboxipam/internal/testsupport"
	"github.com/sandboxipam/sandboxipam/ipamd/config"
	"github.com/sandboxipam/sandboxipam/ipamd/introspect/client"
	"github.com/sandboxipam/sandboxipam/ipamd/introspect/schema"
)

// ipamPods are the five pods, wired by another main plugin with
// sandboxipam as their IPAM: the runtime lists them Ready without IPs.
var ipamPods = []string{"ipam-pod-1", "ipam-pod-2", "ipam-pod-3", "ipam-pod-4", "ipam-pod-5"}

// The first case, in its three forms, through the real ipamd and
// the real plugin with the default config (podLinks.podWiring auto, no
// conflist: ipamd does not know who wires the pods) and every grace a
// millisecond long, so each ADD after the restart comes well past them.
// Every ADD is refused with CNI code 11 naming the five unaccounted
// sandboxes, as /readyz and ipamctl pool name them, until the runtime
// reports two pods' IPs, one pod's DEL comes, an operator releases
// another and the last pod goes; then the next ADD gets 198.18.0.3, the
// address of the pod that was DELed, which no live pod holds.
func TestIPAMOnlyPodsAfterStateLoss(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real ipamd and CNI plugin; skipped with -short")
	}
	faults := map[string]func(t *testing.T, n *node){
		"checkpoint and journal deleted": func(t *testing.T, n *node) {
			for _, p := range []string{n.cfg.CheckpointPath(), n.cfg.CheckpointPath() + ".journal"} {
				if err := os.Remove(p); err != nil {
					t.Fatal(err)
				}
			}
		},
		"snapshot byte flipped":      func(t *testing.T, n *node) { flipByte(t, n.cfg.CheckpointPath(), 2) },
		"early journal byte flipped": func(t *testing.T, n *node) { flipByte(t, n.cfg.CheckpointPath()+".journal", 4) },
	}
	bin := buildIpamd(t)
	for name, fault := range faults {
		t.Run(name, func(t *testing.T) { stateLossCase(t, bin, fault) })
	}
}

// flipByte flips one byte of the file at len/at (an early one for at=4).
func flipByte(t *testing.T, path string, at int) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil || len(data) < 8 {
		t.Fatalf("read %s: %d bytes, %v", path, len(data), err)
	}
	data[len(data)/at] ^= 0x20
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

func stateLossCase(t *testing.T, bin string, fault func(*testing.T, *node)) {
	n := newNode(t, "198.18.0.0/24")
	n.cfg.PodLinks.PodWiring = config.PodWiringAuto // the default
	if n.cfg.PluginWiresEveryPod() {
		t.Fatal("the default config infers from a missing pod link")
	}
	port := n.reserveIntrospection()
	cfgPath, logPath := n.writeConfig(), filepath.Join(n.dir, "ipamd.log")
	cni, intro := cniClient{socket: n.cfg.Socket}, client.NewAdmin(n.cfg.AdminSocketPath())
	plugin := newIPAMOnlyPlugin(t, n.cfg.Socket)
	p := startOnPort(t, port, bin, cfgPath, logPath, cni, intro)
	for i, id := range ipamPods {
		n.addSandbox(id)
		if got, err := plugin.add(t.Context(), id); err != nil || got != fmt.Sprintf("198.18.0.%d/24", i+1) {
			t.Fatalf("ADD %s = %q, %v; want 198.18.0.%d/24", id, got, err, i+1)
		}
	}
	p.kill()
	fault(t, n)
	port.Release()
	p = startBinary(t, bin, cfgPath, logPath, cni, intro, false)
	p.port = port
	pool := waitUnaccounted(t, intro, p, ipamPods)
	if pool.Recovery.Checkpoint == "loaded" {
		t.Fatalf("the checkpoint was damaged and ipamd says it loaded: %+v", pool.Recovery)
	}
	n.addSandboxNow("new-1") // made after the restart
	for try := range 3 {     // every ADD in the first minute, not only the first
		_, err := plugin.add(t.Context(), "new-1")
		var cerr *cniError
		if !errors.As(err, &cerr) || cerr.Code != 11 || !namesRefusal(cerr.Details, ipamPods) {
			t.Fatalf("ADD %d after the restart = %v; want CNI code 11 naming the first 3 of %v and counting 2 more\n%s", try, err, ipamPods, p.logTail())
		}
	}
	if ready, why, err := intro.Ready(t.Context()); ready || err != nil || !namesAll(why, ipamPods) {
		t.Fatalf("/readyz = %v, %q, %v; want not ready naming %v", ready, why, err, ipamPods)
	}
	// Each pod is accounted for in one of the ways an operator sees.
	n.setSandboxIP("ipam-pod-1", "198.18.0.1") // the runtime reports them
	n.setSandboxIP("ipam-pod-2", "198.18.0.2")
	if err := plugin.del(t.Context(), "ipam-pod-3"); err != nil { // its main plugin tears it down
		t.Fatalf("DEL ipam-pod-3: %v", err)
	}
	n.removeSandbox("ipam-pod-3")
	// It is alive in the runtime, so the word needs --force.
	_, err := intro.Release(t.Context(), schema.ReleaseRequest{Network: testNetwork, SandboxID: "ipam-pod-4", IfName: "eth0", Force: true})
	if err == nil || !strings.Contains(err.Error(), "counts that sandbox as holding nothing") {
		t.Fatalf("ipamctl release ipam-pod-4 = %v; want it taken as the operator's word", err)
	}
	n.removeSandbox("ipam-pod-5") // deleted, its DEL lost
	testsupport.Wait(t, "ipamd to be proven", func() (bool, string) {
		ready, why, err := intro.Ready(t.Context())
		return ready, fmt.Sprintf("%s %v", why, err)
	})
	if got, err := plugin.add(t.Context(), "new-1"); err != nil || got != "198.18.0.3/24" {
		t.Fatalf("ADD new-1 once proven = %q, %v; want 198.18.0.3/24 (no live pod holds it)", got, err)
	}
	want := map[string]string{"ipam-pod-1": "198.18.0.1/24", "ipam-pod-2": "198.18.0.2/24", "new-1": "198.18.0.3/24"}
	if got := podsByID(mustPods(t, intro)); !maps.Equal(got, want) {
		t.Fatalf("pods %v, want %v", got, want)
	}
}

// waitUnaccounted waits for a pass that leaves ipamd unproven naming every
// one of ids (an event, not a sleep), and returns the pool it saw.
func waitUnaccounted(t *testing.T, intro *client.Client, p *process, ids []string) schema.Pool {
	t.Helper()
	var pool schema.Pool
	testsupport.Wait(t, "a pass naming the unaccounted sandboxes", func() (bool, string) {
		var err error
		pool, err = intro.Pool(t.Context())
		return err == nil && pool.Proof.Unproven && len(pool.Proof.Waiting) == len(ids) && namesAll(strings.Join(pool.Proof.Waiting, "\n"), ids),
			fmt.Sprintf("%+v %v\n%s", pool.Proof, err, p.logTail())
	})
	return pool
}

// addSandboxNow is addSandbox for a sandbox the runtime makes now.
func (n *node) addSandboxNow(id string) {
	n.addSandbox(id)
	n.mu.Lock()
	sb := n.sandboxes[id]
	sb.CreatedAt = time.Now()
	n.sandboxes[id] = sb
	n.mu.Unlock()
	n.writeState()
}

// namesRefusal reports whether an ADD's refusal names the first 3 of
// ids in sorted order, none of the rest, and counts the rest.
func namesRefusal(text string, ids []string) bool {
	sorted := slices.Sorted(slices.Values(ids))
	named := sorted[:min(3, len(sorted))]
	if !namesAll(text, named) {
		return false
	}
	for _, id := range sorted[len(named):] {
		if strings.Contains(text, "sandbox "+id+" ") {
			return false
		}
	}
	return len(sorted) <= 3 || strings.Contains(text, fmt.Sprintf("... and %d more", len(sorted)-3))
}

func namesAll(text string, ids []string) bool {
	for _, id := range ids {
		if !strings.Contains(text, "sandbox "+id+" ") {
			return false
		}
	}
	return true
}

// A wrong setting shows on the first pod: on a node configured as the
// plugin wiring every pod, the plugin's first ADD as IPAM only is refused
// with an error naming podLinks.podWiring, and counted.
func TestIPAMOnlyADDRefusedWhereThePluginWiresEveryPod(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real ipamd and CNI plugin; skipped with -short")
	}
	n := newNode(t, "198.18.0.0/24")
	n.cfg.PodLinks.PodWiring = config.PodWiringPlugin
	port := n.reserveIntrospection()
	cni, intro := cniClient{socket: n.cfg.Socket}, client.NewAdmin(n.cfg.AdminSocketPath())
	p := startOnPort(t, port, buildIpamd(t), n.writeConfig(), filepath.Join(n.dir, "ipamd.log"), cni, intro)
	defer p.stop()
	n.addSandbox("first-pod")
	_, err := newIPAMOnlyPlugin(t, n.cfg.Socket).add(t.Context(), "first-pod")
	var cerr *cniError
	if !errors.As(err, &cerr) || !strings.Contains(cerr.Details, "podLinks.podWiring is plugin") || !strings.Contains(cerr.Details, "set podLinks.podWiring to ipamOnly") {
		t.Fatalf("IPAM-only ADD = %v; want a refusal naming podLinks.podWiring", err)
	}
	if line := metricLine(scrape(t, n.cfg.Introspection.Address), "ipamd_ipam_only_adds_refused_total"); line != "ipamd_ipam_only_adds_refused_total 1" {
		t.Fatalf("metric line %q, want ipamd_ipam_only_adds_refused_total 1", line)
	}
	if st := mustPool(t, intro); st.Assigned != 0 {
		t.Fatalf("pool %+v: the refused ADD holds an address", st)
	}
}
