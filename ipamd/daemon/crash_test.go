package daemon_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sandboxipam/sandboxipam/internal/testsupport"
	"github.com/sandboxipam/sandboxipam/ipamd/api/wire"
	"github.com/sandboxipam/sandboxipam/ipamd/ctl"
)

var (
	crashSeed  = flag.Uint64("crash.seed", 0, "replay TestCrashRecoveryRealBinary with this seed (or set SANDBOXIPAM_CRASH_SEED)")
	crashKills = flag.Int("crash.kills", 200, "SIGKILLs of ipamd in TestCrashRecoveryRealBinary")
)

const (
	crashClients      = 4
	crashSlotsPerNode = 6 // pods per client: 24 pods in a 30-address pool
)

// crashModel is what the test's clients know for sure, plus the calls whose
// answers a SIGKILL swallowed.
type crashModel struct {
	mu sync.Mutex
	// live: acknowledged ADDs not yet acknowledged DELed, sandbox -> address.
	live map[string]string
	// slot: each pod slot's current sandbox ID ("" when it has none).
	slot map[string]string
	// uncertainAdd: ADDs that got no answer; the sandbox exists in the
	// runtime until the test resolves them.
	uncertainAdd map[string]bool
	// uncertainDel: DELs that got no answer.
	uncertainDel map[string]bool
	gen          int
	acked        struct{ adds, dels int }
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
func TestCrashRecoveryRealBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test: 200 SIGKILLs of the real binary; skipped with -short")
	}
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
	t.Logf("seed %d (replay: go test -run TestCrashRecoveryRealBinary ./ipamd/daemon/ -crash.seed=%d)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, 0x5eed))

	bin := buildIpamd(t)
	n := newNode(t, "198.18.0.0/27")
	n.cfg.Introspection.Address = freeLoopbackAddr(t)
	n.cfg.Log.Level = "info" // one line per change: the history of a violation
	// The sandbox of an unanswered ADD reports no IP and has no pod link:
	// after a destroyed state it must keep ipamd unproven until it is
	// resolved, not be presumed empty a moment after start.
	n.cfg.Node.LinkGrace = time.Hour
	cfgPath := n.writeConfig()
	logPath := filepath.Join(n.dir, "ipamd.log")
	cni := cniClient{socket: n.cfg.Socket}
	intro := ctl.NewAdmin(n.cfg.AdminSocketPath())
	m := &crashModel{live: map[string]string{}, slot: map[string]string{}, uncertainAdd: map[string]bool{}, uncertainDel: map[string]bool{}}

	kills := 0
	var faults [faultKinds]int
	fault := faultNone
	for round := 0; ; round++ {
		// A runtime that is down, or a destroyed state with unaccounted
		// pods, leaves ipamd serving but not ready: wait for the socket.
		ready := fault != faultRuntimeDown && !(stateDestroyed(fault) && len(m.uncertainAdd) > 0)
		p := startBinary(t, bin, cfgPath, logPath, cni, intro, ready)
		if stateDestroyed(fault) {
			m.checkRefusesUntilProven(t, round, cni, intro, p)
		}
		if fault == faultRuntimeDown {
			n.setUnavailable(false)
		}
		m.resolve(t, rng, n, cni, intro, stateDestroyed(fault), p)
		m.verify(t, round, intro, p)
		if kills == *crashKills {
			p.stop()
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
	t.Logf("seed %d: %d SIGKILLs, %d acknowledged ADDs, %d acknowledged DELs, %d pods live at the end, 0 violations",
		seed, kills, m.acked.adds, m.acked.dels, len(m.live))
	for f := faultStateLost; f < faultKinds; f++ {
		t.Logf("fault %q: %d restarts", faultNames[f], faults[f])
	}
}

// checkRefusesUntilProven checks, after the state was destroyed, that
// ipamd says it lost it and hands out nothing while a pod the runtime
// lists is not accounted for (the sandboxes of unanswered ADDs report no
// IP). Each live pod's address comes back from the runtime's IPs.
func (m *crashModel) checkRefusesUntilProven(t *testing.T, round int, cni cniClient, intro *ctl.Client, p *process) {
	t.Helper()
	pool := mustPool(t, intro)
	if pool.Recovery.Checkpoint == "loaded" {
		t.Fatalf("round %d: the state was destroyed and ipamd says its checkpoint loaded: %+v\n%s", round, pool.Recovery, p.logTail())
	}
	if len(m.uncertainAdd) == 0 {
		return
	}
	if !pool.Proof.Unproven {
		t.Fatalf("round %d: a listed pod reports no IP and ipamd says it is proven: %+v\n%s", round, pool.Proof, p.logTail())
	}
	_, err := cni.add(t.Context(), "probe-while-unproven")
	var werr *wire.Error
	if !errors.As(err, &werr) || werr.Code != wire.CodeUnavailable {
		t.Fatalf("round %d: ADD while unproven = %v, want CodeUnavailable (CNI 11)\n%s", round, err, p.logTail())
	}
}

// chaos runs the clients and SIGKILLs ipamd after a random delay.
func (m *crashModel) chaos(t *testing.T, rng *rand.Rand, n *node, cni cniClient, p *process) {
	delay := time.Duration(rng.IntN(40_000)) * time.Microsecond
	seeds := make([]uint64, crashClients)
	for i := range seeds {
		seeds[i] = rng.Uint64()
	}
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	for c := range crashClients {
		wg.Go(func() { m.client(ctx, rand.New(rand.NewPCG(seeds[c], uint64(c))), c, n, cni) })
	}
	// The kill lands at a random moment of the churn on purpose: no event
	// marks "somewhere in the middle of a commit", and the seed replays
	// the choice of moment (not the interleaving it hits).
	time.Sleep(delay)
	p.kill()
	cancel()
	wg.Wait()
}

// client ADDs and DELs its own pod slots until a call fails (ipamd died).
func (m *crashModel) client(ctx context.Context, rng *rand.Rand, c int, n *node, cni cniClient) {
	for ctx.Err() == nil {
		slot := fmt.Sprintf("c%d-s%d", c, rng.IntN(crashSlotsPerNode))
		m.mu.Lock()
		id := m.slot[slot]
		if id == "" {
			m.gen++
			id = fmt.Sprintf("%s-g%06d", slot, m.gen)
			m.slot[slot] = id
		}
		_, adding := m.live[id]
		adding = !adding
		m.mu.Unlock()
		if adding {
			n.addSandbox(id) // the runtime has the sandbox before CNI ADD
			ip, err := cni.add(ctx, id)
			m.mu.Lock()
			if err != nil {
				m.uncertainAdd[id] = true
				m.slot[slot] = ""
			} else {
				m.live[id] = ip
				m.acked.adds++
			}
			m.mu.Unlock()
			if err != nil {
				return
			}
			// The runtime records the pod's IP, as CRI status does.
			n.setSandboxIP(id, strings.Split(ip, "/")[0])
			continue
		}
		_, err := cni.del(ctx, id)
		m.mu.Lock()
		delete(m.live, id)
		m.slot[slot] = ""
		if err != nil {
			m.uncertainDel[id] = true
		} else {
			m.acked.dels++
		}
		m.mu.Unlock()
		if err != nil {
			return
		}
		n.removeSandbox(id) // the sandbox goes after its DEL
	}
}

// resolve settles the calls a kill left unanswered: an unanswered DEL is
// retried; an unanswered ADD is DELed, or its sandbox removed and left to
// the reconciler.
//
// After the state was destroyed there is nothing for the reconciler to
// release (an unanswered ADD's assignment went with the state): each is
// DELed, as the runtime does after a failed ADD, and the pool is proven.
func (m *crashModel) resolve(t *testing.T, rng *rand.Rand, n *node, cni cniClient, intro *ctl.Client, destroyed bool, p *process) {
	t.Helper()
	ctx := t.Context()
	testsupport.Wait(t, "the adapter to be healthy", func() (bool, string) {
		a, err := intro.Adapter(ctx)
		return err == nil && a.Health.Healthy, fmt.Sprintf("%+v %v", a.Health, err)
	})
	toReconciler := map[string]bool{}
	for _, id := range sortedKeys(m.uncertainAdd) {
		if destroyed || rng.IntN(2) == 0 {
			if _, err := cni.del(ctx, id); err != nil {
				t.Fatalf("DEL of unanswered ADD %s: %v", id, err)
			}
			n.removeSandbox(id)
		} else {
			toReconciler[id] = true
		}
	}
	if len(toReconciler) > 0 {
		// The pod runs long enough for a listing to see it, then goes
		// while its DEL is lost: the reconciler releases only a sandbox
		// the adapter listed once and lists no more.
		if _, err := intro.Reconcile(ctx, false); err != nil {
			t.Fatalf("reconcile while the unanswered ADDs' pods run: %v", err)
		}
		for id := range toReconciler {
			n.removeSandbox(id)
		}
	}
	for _, id := range sortedKeys(m.uncertainDel) {
		if _, err := cni.del(ctx, id); err != nil {
			t.Fatalf("retried DEL %s: %v", id, err)
		}
		n.removeSandbox(id)
	}
	res, err := intro.Reconcile(ctx, false)
	if err != nil {
		t.Fatalf("reconcile: %v", err)
	}
	if res.Unproven {
		t.Fatalf("still unproven once every pod is accounted for: %+v", res)
	}
	for _, pod := range res.Released {
		if !toReconciler[pod.SandboxID] {
			_, live := m.live[pod.SandboxID]
			t.Fatalf("reconcile released %s (%s), which the model holds live (%v) or already released; ipamd's log about it:\n%s",
				pod.SandboxID, pod.IP, live, p.logAbout(pod.SandboxID))
		}
	}
	clear(m.uncertainAdd)
	clear(m.uncertainDel)
}

// verify compares ipamd's assignments with the model.
func (m *crashModel) verify(t *testing.T, round int, intro *ctl.Client, p *process) {
	t.Helper()
	pods := mustPods(t, intro)
	got := podsByID(pods)
	seen := map[string]string{}
	for _, pod := range pods.Pods {
		if other, dup := seen[pod.IP]; dup {
			t.Fatalf("round %d: %s assigned to both %s and %s\n%s", round, pod.IP, other, pod.SandboxID, p.logTail())
		}
		seen[pod.IP] = pod.SandboxID
	}
	for id, ip := range m.live {
		if got[id] != ip {
			t.Fatalf("round %d: acknowledged ADD %s held %s, ipamd now says %q\n%s", round, id, ip, got[id], p.logTail())
		}
	}
	for id, ip := range got {
		if _, ok := m.live[id]; !ok {
			t.Fatalf("round %d: %s holds %s but the model has it released (leak)\n%s", round, id, ip, p.logTail())
		}
	}
	if pool := mustPool(t, intro); pool.Assigned != len(m.live) || pool.Total != 30 {
		t.Fatalf("round %d: pool %+v, want %d assigned of 30", round, pool, len(m.live))
	}
}

func sortedKeys(m map[string]bool) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
