package daemon_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sandboxipam/sandboxipam/internal/testsupport"
	"github.com/sandboxipam/sandboxipam/ipamd/api/wire"
	"github.com/sandboxipam/sandboxipam/ipamd/introspect/client"
)

// unreported returns, sorted, the sandboxes the runtime lists without an
// address: after a destroyed state nothing accounts for them (no pod
// links in this test, and ipamd does not know who wires the pods).
func (n *node) unreported() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	var ids []string
	for id, sb := range n.sandboxes {
		if len(sb.IPs) == 0 {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}

// chaos runs the clients and SIGKILLs ipamd after a random delay.
func (m *crashModel) chaos(t *testing.T, rng *rand.Rand, n *node, cni cniClient, p *process) {
	delay := time.Duration(rng.IntN(40_000)) * time.Microsecond
	ctx, cancel := context.WithCancel(t.Context())
	wait := m.startClients(ctx, rng, n, cni, new(atomic.Bool))
	// The kill lands at a random moment of the churn on purpose: no event
	// marks "somewhere in the middle of a commit", and the seed replays
	// the choice of moment (not the interleaving it hits).
	time.Sleep(delay)
	p.kill()
	cancel()
	wait()
}

func (m *crashModel) startClients(ctx context.Context, rng *rand.Rand, n *node, cni cniClient, stop *atomic.Bool) (wait func()) {
	seeds := make([]uint64, crashClients)
	for i := range seeds {
		seeds[i] = rng.Uint64()
	}
	var wg sync.WaitGroup
	for c := range crashClients {
		wg.Go(func() { m.client(ctx, stop, rand.New(rand.NewPCG(seeds[c], uint64(c))), c, n, cni) })
	}
	return wg.Wait
}

// client ADDs and DELs its own pod slots until a call fails (ipamd died)
// or stop is set. Clients from crashIPAMOnly on exec the real plugin as
// IPAM only, and their runtime reports no IP.
func (m *crashModel) client(ctx context.Context, stop *atomic.Bool, rng *rand.Rand, c int, n *node, cni cniClient) {
	ipamOnly := c >= crashIPAMOnly
	for ctx.Err() == nil && !stop.Load() {
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
		var ok bool
		if adding {
			ok = m.add(ctx, n, cni, slot, id, ipamOnly)
		} else {
			ok = m.del(ctx, rng, n, cni, slot, id, ipamOnly)
		}
		if !ok {
			return
		}
	}
}

func (m *crashModel) add(ctx context.Context, n *node, cni cniClient, slot, id string, ipamOnly bool) bool {
	n.addSandbox(id) // the runtime has the sandbox before CNI ADD
	var ip string
	var err error
	if ipamOnly {
		ip, err = m.plugin.add(ctx, id)
	} else {
		ip, err = cni.add(ctx, id)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	switch {
	case exhausted(err):
		m.acked.exhausted++
		m.slot[slot] = ""
		n.removeSandbox(id) // the ADD failed for sure: the runtime gives up
		return true
	case err != nil:
		m.uncertainAdd[id] = true
		m.slot[slot] = ""
		return false
	}
	m.live[id] = ip
	m.acked.adds++
	if ipamOnly {
		m.acked.ipamOnlyAdds++
		return true
	}
	// The runtime records the pod's IP, as CRI status does.
	n.setSandboxIP(id, strings.Split(ip, "/")[0])
	m.reported[id] = true
	return true
}

func exhausted(err error) bool {
	var werr *wire.Error
	var cerr *cniError
	return errors.As(err, &werr) && werr.Code == wire.CodeResourceExhausted || errors.As(err, &cerr) && cerr.Code == 101
}

func (m *crashModel) del(ctx context.Context, rng *rand.Rand, n *node, cni cniClient, slot, id string, ipamOnly bool) bool {
	if rng.IntN(crashLostDEL) == 0 {
		// The pod goes; its DEL never reaches ipamd.
		n.removeSandbox(id)
		m.mu.Lock()
		delete(m.live, id)
		m.slot[slot] = ""
		m.lostDel[id] = true
		m.acked.lostDels++
		m.mu.Unlock()
		return true
	}
	err := m.delete(ctx, cni, id, ipamOnly)
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
		return false
	}
	n.removeSandbox(id) // the sandbox goes after its DEL
	return true
}

func (m *crashModel) delete(ctx context.Context, cni cniClient, id string, ipamOnly bool) error {
	if ipamOnly {
		return m.plugin.del(ctx, id)
	}
	_, err := cni.del(ctx, id)
	return err
}

func isIPAMOnly(id string) bool {
	var c, s, g int
	_, err := fmt.Sscanf(id, "c%d-s%d-g%d", &c, &s, &g)
	return err == nil && c >= crashIPAMOnly
}

// resolve settles the calls a kill left unanswered: an unanswered DEL is
// retried; an unanswered ADD is DELed, or its sandbox removed and left to
// the reconciler. After a destroyed state, each live pod whose runtime
// reports no address gets it reported (the runtime catches up) or is
// DELed, so the pool can be proven. Then an ADD made now and listed by a
// pass shows the adapter sees what CNI sees, and that pass releases the
// pods whose DEL was lost.
func (m *crashModel) resolve(t *testing.T, rng *rand.Rand, n *node, cni cniClient, intro *client.Client, destroyed bool, round int, p *process) {
	t.Helper()
	ctx := t.Context()
	testsupport.Wait(t, "the adapter to be healthy", func() (bool, string) {
		a, err := intro.Adapter(ctx)
		return err == nil && a.Health.Healthy, fmt.Sprintf("%+v %v", a.Health, err)
	})
	toReconciler := copySet(m.lostDel)
	for _, id := range sortedKeys(m.uncertainAdd) {
		if destroyed || rng.IntN(2) == 0 {
			if err := m.delete(ctx, cni, id, isIPAMOnly(id)); err != nil {
				t.Fatalf("DEL of unanswered ADD %s: %v", id, err)
			}
			n.removeSandbox(id)
		} else {
			toReconciler[id] = true
		}
	}
	if destroyed {
		m.accountForUnreported(t, rng, n, cni)
	}
	if len(toReconciler) > len(m.lostDel) {
		// The pod runs long enough for a listing to see it, then goes
		// while its DEL is lost. The pass may find the adapter not yet
		// seeing (a lost DEL no listing showed): it marks the listed ones
		// all the same.
		if res, err := intro.Reconcile(ctx, false); err != nil && len(res.Missing) == 0 {
			t.Fatalf("reconcile while the unanswered ADDs' pods run: %v", err)
		}
		for id := range toReconciler {
			n.removeSandbox(id)
		}
	}
	for _, id := range sortedKeys(m.uncertainDel) {
		if err := m.delete(ctx, cni, id, isIPAMOnly(id)); err != nil {
			t.Fatalf("retried DEL %s: %v", id, err)
		}
		n.removeSandbox(id)
	}
	// A pass proves a destroyed state first: no ADD is served before.
	// Lost DELs need an adapter that has shown it sees CNI: an ADD made
	// now, listed by the pass, shows it.
	if destroyed || len(m.lostDel) == 0 {
		m.reconcile(t, intro, toReconciler, p)
	}
	if len(m.lostDel) > 0 {
		m.showSight(t, n, cni, intro, toReconciler, round, p)
	}
	clear(m.uncertainAdd)
	clear(m.uncertainDel)
	clear(m.lostDel)
}

func copySet(set map[string]bool) map[string]bool {
	out := make(map[string]bool, len(set))
	for k := range set {
		out[k] = true
	}
	return out
}

// accountForUnreported makes the runtime report each live pod's address,
// or DELs the pod, at random.
func (m *crashModel) accountForUnreported(t *testing.T, rng *rand.Rand, n *node, cni cniClient) {
	t.Helper()
	for _, id := range sortedKeys(m.liveSet()) {
		if m.reported[id] {
			continue
		}
		if rng.IntN(2) == 0 {
			n.setSandboxIP(id, strings.Split(m.live[id], "/")[0])
			m.reported[id] = true
			continue
		}
		if err := m.delete(t.Context(), cni, id, isIPAMOnly(id)); err != nil {
			t.Fatalf("DEL of unreported %s: %v", id, err)
		}
		n.removeSandbox(id)
		delete(m.live, id)
		m.acked.dels++
	}
}

func (m *crashModel) liveSet() map[string]bool {
	out := make(map[string]bool, len(m.live))
	for id := range m.live {
		out[id] = true
	}
	return out
}

// reconcile runs a pass that must leave the store proven and release
// nothing but what may go.
func (m *crashModel) reconcile(t *testing.T, intro *client.Client, mayGo map[string]bool, p *process) {
	t.Helper()
	res, err := intro.Reconcile(t.Context(), false)
	if err != nil && len(res.Missing) == 0 {
		t.Fatalf("reconcile: %v", err)
	}
	if res.Unproven {
		t.Fatalf("still unproven once every pod is accounted for: %+v", res)
	}
	for _, pod := range res.Released {
		if !mayGo[pod.SandboxID] {
			_, live := m.live[pod.SandboxID]
			holder := m.holder(pod.IP)
			if live || holder != "" {
				t.Fatalf("reconcile released %s (%s), which the model holds live (%v, held by %q); ipamd's log about it:\n%s",
					pod.SandboxID, pod.IP, live, holder, p.logAbout(pod.SandboxID))
			}
			// Its DEL was answered, and a periodic pass of a store still
			// unproven listed it before the test removed the sandbox
			// (kubelet's order too: DEL, then the sandbox goes), Ready
			// and reporting its address, and adopted it again. Released
			// again now, and no live pod holds the address: harmless.
			t.Logf("reconcile released %s (%s) again: its DEL was answered, a listing between the DEL and its removal re-adopted it", pod.SandboxID, pod.IP)
			continue
		}
		m.acked.released++
	}
}

// holder is the live pod the model has holding ip, or "".
func (m *crashModel) holder(ip string) string {
	for id, cidr := range m.live {
		if strings.Split(cidr, "/")[0] == strings.Split(ip, "/")[0] {
			return id
		}
	}
	return ""
}

// showSight ADDs a pod made now and has a pass list it: the adapter
// shows it sees what CNI sees, and the same pass releases the sandboxes
// no listing showed whose DEL was lost. The pod is DELed again.
func (m *crashModel) showSight(t *testing.T, n *node, cni cniClient, intro *client.Client, mayGo map[string]bool, round int, p *process) {
	t.Helper()
	id := fmt.Sprintf("sight-r%d", round)
	n.addSandboxNow(id)
	ip, err := cni.add(t.Context(), id)
	if err != nil {
		t.Fatalf("ADD %s: %v\n%s", id, err, p.logTail())
	}
	for other, held := range m.live {
		if held == ip {
			t.Fatalf("ADD %s got %s, which live pod %s holds\n%s", id, ip, other, p.logTail())
		}
	}
	m.reconcile(t, intro, mayGo, p)
	if a, err := intro.Adapter(t.Context()); err != nil || a.SeesCNI == "" {
		t.Fatalf("after a pass listed %s, the adapter is not seen to see CNI: %+v %v\n%s", id, a, err, p.logTail())
	}
	if _, err := cni.del(t.Context(), id); err != nil {
		t.Fatal(err)
	}
	n.removeSandbox(id)
}

// verify compares ipamd's assignments with the model.
func (m *crashModel) verify(t *testing.T, round int, intro *client.Client, p *process) {
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
			t.Fatalf("round %d: %s holds %s but the model has it released (leak)\n%s", round, id, ip, p.logAbout(id))
		}
	}
	if pool := mustPool(t, intro); pool.Assigned != len(m.live) || pool.Total != crashPool {
		t.Fatalf("round %d: pool %+v, want %d assigned of %d", round, pool, len(m.live), crashPool)
	}
}

// settle runs a last burst of churn, lost DELs included, without a kill,
// then waits for two periodic passes that started past the grace after
// it: by then every address no live pod holds must be free.
func (m *crashModel) settle(t *testing.T, rng *rand.Rand, n *node, cni cniClient, intro *client.Client, p *process) {
	t.Helper()
	stop := new(atomic.Bool)
	wait := m.startClients(t.Context(), rng, n, cni, stop)
	// Longer than two reconcile intervals: passes run during the churn.
	time.Sleep(700 * time.Millisecond)
	stop.Store(true)
	wait()
	if len(m.uncertainAdd)+len(m.uncertainDel) > 0 {
		t.Fatalf("calls failed without a kill: ADDs %v, DELs %v\n%s", m.uncertainAdd, m.uncertainDel, p.logTail())
	}
	after := time.Now().Add(time.Millisecond) // the grace
	var starts []time.Time
	testsupport.Wait(t, "two periodic passes past the grace after the churn", func() (bool, string) {
		a, err := intro.Adapter(t.Context())
		if err == nil && a.Last != nil && a.Last.At.After(after) && !slices.ContainsFunc(starts, a.Last.At.Equal) {
			starts = append(starts, a.Last.At)
		}
		return len(starts) >= 2, fmt.Sprintf("passes %v, %v", starts, err)
	})
	m.verify(t, -1, intro, p)
	if pool := mustPool(t, intro); pool.Free+pool.Cooling != crashPool-len(m.live) || pool.Unproven != 0 {
		t.Fatalf("at the end: pool %+v with %d pods live: every other address must be free", pool, len(m.live))
	}
	t.Logf("at the end: %d lost DELs in the last burst released by periodic passes, %d pods live, %d addresses free",
		len(m.lostDel), len(m.live), crashPool-len(m.live))
}

func sortedKeys(m map[string]bool) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
