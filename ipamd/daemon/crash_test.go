package daemon_test

import (
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/sandboxipam/sandboxipam/ipamd/api/wire"
	"github.com/sandboxipam/sandboxipam/ipamd/config"
	"github.com/sandboxipam/sandboxipam/ipamd/introspect/client"
)

var (
	crashSeed  = flag.Uint64("crash.seed", 0, "replay TestCrashRecoveryRealBinary with this seed (or set SANDBOXIPAM_CRASH_SEED)")
	crashKills = flag.Int("crash.kills", 200, "SIGKILLs of ipamd in TestCrashRecoveryRealBinary")
)

const (
	crashClients      = 4
	crashSlotsPerNode = 6 // pods per client: 24 pods in a 62-address pool
	// crashIPAMOnly: clients from this one on make their pods through the
	// real CNI plugin as the IPAM of another main plugin; their runtime
	// reports no IP.
	crashIPAMOnly = 2
	// crashLostDEL: one DEL in this many is lost (the pod goes from the
	// runtime, the DEL never reaches ipamd), as when a DEL fails while
	// ipamd is down.
	crashLostDEL = 7
	crashPool    = 62
)

// crashModel is what the test's clients know for sure, plus the calls whose
// answers a SIGKILL swallowed.
type crashModel struct {
	mu sync.Mutex
	// live: acknowledged ADDs not yet acknowledged DELed, sandbox -> address.
	live map[string]string
	// reported: live sandboxes whose runtime reports their address.
	reported map[string]bool
	// slot: each pod slot's current sandbox ID ("" when it has none).
	slot map[string]string
	// uncertainAdd: ADDs that got no answer; the sandbox exists in the
	// runtime until the test resolves them.
	uncertainAdd map[string]bool
	// uncertainDel: DELs that got no answer.
	uncertainDel map[string]bool
	// lostDel: pods gone from the runtime whose DEL never came: the
	// reconciler must release them.
	lostDel map[string]bool
	gen     int
	plugin  ipamOnlyPlugin
	acked   struct{ adds, dels, ipamOnlyAdds, lostDels, released, refusals, exhausted int }
}

// Faults the crash test injects while ipamd is down, besides the kill.
const (
	faultNone = iota
	faultStateLost
	faultSnapshotFlip
	faultJournalFlip
	faultRuntimeDown
	faultKinds
)

var faultNames = [faultKinds]string{"none", "state directory deleted", "snapshot byte flipped", "journal byte flipped", "runtime down"}

// injectFault picks a fault for the restart to come (most restarts get
// none) and applies it; it reports which.
func injectFault(t *testing.T, rng *rand.Rand, n *node) int {
	t.Helper()
	if rng.IntN(10) < 7 {
		return faultNone
	}
	fault := 1 + rng.IntN(faultKinds-1)
	snapshot := n.cfg.CheckpointPath()
	switch fault {
	case faultStateLost:
		if err := os.RemoveAll(n.cfg.StateDir); err != nil {
			t.Fatal(err)
		}
	case faultSnapshotFlip, faultJournalFlip:
		path := snapshot
		if fault == faultJournalFlip {
			path = snapshot + ".journal"
		}
		data, err := os.ReadFile(path)
		if err != nil || len(data) == 0 {
			return faultNone // nothing written there yet
		}
		data[rng.IntN(len(data))] ^= byte(1 + rng.IntN(255))
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
	case faultRuntimeDown:
		n.setUnavailable(true)
	}
	return fault
}

// stateDestroyed reports whether a fault leaves ipamd without a trusted
// checkpoint: it must then hand out nothing until the runtime proves the
// pool, and it rebuilds the live pods from the IPs the runtime reports.
func stateDestroyed(fault int) bool {
	return fault == faultStateLost || fault == faultSnapshotFlip || fault == faultJournalFlip
}

// TestCrashRecoveryRealBinary SIGKILLs the real ipamd at random points
// while several clients ADD and DEL concurrently, and after every restart
// checks against the model: no address is assigned twice, every
// acknowledged ADD still holds its address, every acknowledged DEL stays
// released, and nothing leaks once unanswered calls are resolved (half by
// a retried DEL, as kubelet does, half by the reconciler, with the
// sandbox gone from the runtime).
//
// It runs with the default podLinks.podWiring (auto, no conflist: ipamd does
// not know who wires the pods) and every grace a millisecond, so every
// ADD after a restart comes well past them. Half the clients make their
// pods through the real CNI plugin as IPAM only, and the runtime reports
// no IP for those; one DEL in crashLostDEL is lost; the reconciler runs
// every 300 ms besides the passes the test asks for, and most pods live
// a few milliseconds, far less than that. After a destroyed state, every
// ADD is refused with CNI code 11 naming the pods nothing accounts for,
// or gets an address no live pod holds. At the end a last burst runs
// without a kill, and once two periodic passes have started past the
// grace after it, ipamd holds exactly the live pods' addresses.
func TestCrashRecoveryRealBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test: 200 SIGKILLs of the real binary; skipped with -short")
	}
	seed := crashSeedValue(t)
	t.Logf("seed %d (replay: go test -run TestCrashRecoveryRealBinary ./ipamd/daemon/ -crash.seed=%d)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, 0x5eed))

	bin := buildIpamd(t)
	n := newNode(t, "198.18.0.0/26")
	n.cfg.Introspection.Address = freeLoopbackAddr(t)
	n.cfg.Log.Level = "info" // one line per change: the history of a violation
	n.cfg.PodLinks.PodWiring = config.PodWiringAuto
	n.cfg.Advanced.Reconcile.LinkGrace = time.Millisecond
	n.cfg.Reconcile.Interval = 300 * time.Millisecond
	cfgPath := n.writeConfig()
	logPath := filepath.Join(n.dir, "ipamd.log")
	cni := cniClient{socket: n.cfg.Socket}
	intro := client.NewAdmin(n.cfg.AdminSocketPath())
	m := &crashModel{live: map[string]string{}, reported: map[string]bool{}, slot: map[string]string{},
		uncertainAdd: map[string]bool{}, uncertainDel: map[string]bool{}, lostDel: map[string]bool{},
		plugin: newIPAMOnlyPlugin(t, n.cfg.Socket)}

	kills := 0
	var faults [faultKinds]int
	fault := faultNone
	var p *process
	for round := 0; ; round++ {
		// A runtime that is down, or a destroyed state with unaccounted
		// pods, leaves ipamd serving but not ready: wait for the socket.
		ready := fault != faultRuntimeDown && !(stateDestroyed(fault) && len(n.unreported()) > 0)
		p = startBinary(t, bin, cfgPath, logPath, cni, intro, ready)
		if stateDestroyed(fault) {
			m.checkRefusesUntilProven(t, round, n, cni, intro, p)
		}
		if fault == faultRuntimeDown {
			n.setUnavailable(false)
		}
		m.resolve(t, rng, n, cni, intro, stateDestroyed(fault), round, p)
		m.verify(t, round, intro, p)
		if kills == *crashKills {
			break
		}
		m.chaos(t, rng, n, cni, p)
		kills++
		fault = injectFault(t, rng, n)
		faults[fault]++
		if fault != faultNone {
			t.Logf("round %d: %s", round+1, faultNames[fault])
		}
	}
	m.settle(t, rng, n, cni, intro, p)
	p.stop()
	t.Logf("seed %d: %d SIGKILLs, %d acknowledged ADDs (%d by the plugin as IPAM only, runtime reporting no IP), %d acknowledged DELs, "+
		"%d DELs lost, %d released by the passes the test ran (periodic passes released others), %d ADDs refused with code 11 after a destroyed state, %d pods live at the end; "+
		"0 doubled, 0 leaked, %d ADDs failed for an exhausted pool",
		seed, kills, m.acked.adds, m.acked.ipamOnlyAdds, m.acked.dels, m.acked.lostDels, m.acked.released, m.acked.refusals, len(m.live), m.acked.exhausted)
	for f := faultStateLost; f < faultKinds; f++ {
		t.Logf("fault %q: %d restarts", faultNames[f], faults[f])
	}
	if m.acked.exhausted > 0 {
		t.Fatalf("%d ADDs found the pool exhausted: %d pods at most in a %d-address pool, so leaks filled it", m.acked.exhausted, crashClients*crashSlotsPerNode, crashPool)
	}
}

func crashSeedValue(t *testing.T) uint64 {
	seed := *crashSeed
	if env := os.Getenv("SANDBOXIPAM_CRASH_SEED"); env != "" && seed == 0 {
		var err error
		if seed, err = strconv.ParseUint(env, 10, 64); err != nil {
			t.Fatalf("SANDBOXIPAM_CRASH_SEED=%q: %v", env, err)
		}
	}
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	return seed
}

// checkRefusesUntilProven checks, after the state was destroyed, that
// ipamd says it lost it and that an ADD well past every grace is refused
// with code 11 naming every sandbox nothing accounts for, or, when there
// is none, gets an address no live pod holds.
func (m *crashModel) checkRefusesUntilProven(t *testing.T, round int, n *node, cni cniClient, intro *client.Client, p *process) {
	t.Helper()
	pool := mustPool(t, intro)
	if pool.Recovery.Checkpoint == "loaded" {
		t.Fatalf("round %d: the state was destroyed and ipamd says its checkpoint loaded: %+v\n%s", round, pool.Recovery, p.logTail())
	}
	want := n.unreported()
	probe := fmt.Sprintf("probe-r%d", round)
	n.addSandboxNow(probe) // made after the restart
	defer n.removeSandbox(probe)
	if len(want) == 0 {
		ip, err := cni.add(t.Context(), probe)
		if err != nil {
			t.Fatalf("round %d: ADD with every pod accounted for: %v\n%s", round, err, p.logTail())
		}
		for id, held := range m.live {
			if held == ip {
				t.Fatalf("round %d: ADD after a destroyed state got %s, which live pod %s holds\n%s", round, ip, id, p.logTail())
			}
		}
		if _, err := cni.del(t.Context(), probe); err != nil {
			t.Fatal(err)
		}
		return
	}
	waitUnaccounted(t, intro, p, want)
	_, err := cni.add(t.Context(), probe)
	var werr *wire.Error
	if !errors.As(err, &werr) || werr.Code != wire.CodeUnavailable || !namesRefusal(werr.Message, want) {
		t.Fatalf("round %d: ADD while unproven = %v, want CodeUnavailable (CNI 11) naming the first 3 of %v and counting the rest\n%s", round, err, want, p.logTail())
	}
	m.acked.refusals++
	// The runtime DELs a sandbox whose ADD failed.
	if _, err := cni.del(t.Context(), probe); err != nil {
		t.Fatal(err)
	}
}
