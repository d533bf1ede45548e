package reclaim

import (
	"testing"
	"time"
)

// Condition (e), case by case: what keeps a block, what proves its node
// gone, and what proves neither.
func TestNodeDead(t *testing.T) {
	t0 := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	now := t0.Add(10 * time.Minute)
	in := func(a AliveSeen) Input {
		return Input{BlockCIDR: "198.18.0.0/26", BlockNodeName: "n1", BlockNodeUID: "uid-1", Alive: a, Now: now, Grace: 5 * time.Minute}
	}
	addrs := []string{"10.0.0.1:61682", "[fd00::1]:61682"}
	const noAddr = "the ipamd Lease of node n1 (UID uid-1) records no address to ask it on (annotation sandboxipam.io/alive-addresses): " +
		"only an operator's confirmation (annotation sandboxipam.io/confirm-node-gone: uid-1 on the block) can prove the node gone"
	cases := []struct {
		name  string
		seen  AliveSeen
		dead  bool
		words string
	}{
		{"no address, no confirmation", AliveSeen{}, false, noAddr},
		{"no address, a former Node's confirmation", AliveSeen{Confirmed: "uid-0"}, false, noAddr + " (the annotation names UID uid-0, not the block's)"},
		{"no address, confirmed", AliveSeen{Confirmed: "uid-1"}, true,
			"an operator confirmed node n1 (UID uid-1) gone (annotation sandboxipam.io/confirm-node-gone on the block)"},
		{"confirmed, but answered within the grace", AliveSeen{Confirmed: "uid-1", Addresses: addrs, AliveAt: t0.Add(5 * time.Minute), AliveBy: "10.0.0.1:61682: node n1"}, false,
			"the ipamd of node n1 (UID uid-1) answered alive 5m0s ago (10.0.0.1:61682: node n1), within the grace 5m0s: the node may still run pods on 198.18.0.0/26"},
		{"answered during this pass, after its time was taken", AliveSeen{Addresses: addrs, AliveAt: t0.Add(10*time.Minute + 2*time.Millisecond), AliveBy: "10.0.0.1:61682: node n1"}, false,
			"the ipamd of node n1 (UID uid-1) answered alive 0s ago (10.0.0.1:61682: node n1)"},
		{"confirmed, the last answer past the grace", AliveSeen{Confirmed: "uid-1", Addresses: addrs, AliveAt: t0.Add(5*time.Minute - time.Second)}, true,
			"an operator confirmed node n1 (UID uid-1) gone"},
		{"not yet asked", AliveSeen{Addresses: addrs}, false, "the ipamd of node n1 (UID uid-1) not yet asked on 10.0.0.1:61682, [fd00::1]:61682"},
		{"another machine answers", AliveSeen{Addresses: addrs, Other: "10.0.0.1:61682: node n2, UID \"uid-2\""}, false,
			"another machine answered on an address of node n1 (UID uid-1) (10.0.0.1:61682: node n2, UID \"uid-2\"): neither alive nor gone; confirm with annotation sandboxipam.io/confirm-node-gone: uid-1 on the block"},
		{"silent for the grace", AliveSeen{Addresses: addrs, SilentSince: t0.Add(5 * time.Minute), Silence: "refused"}, false,
			"no answer from the ipamd of node n1 (UID uid-1) on 10.0.0.1:61682, [fd00::1]:61682 for 5m0s, not longer than the grace 5m0s"},
		{"silent past the grace", AliveSeen{Addresses: addrs, SilentSince: t0, Silence: "refused"}, true,
			"no answer from the ipamd of node n1 (UID uid-1) on 10.0.0.1:61682, [fd00::1]:61682 for 10m0s, longer than the grace 5m0s (last: refused)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			words, dead := nodeDead(in(c.seen))
			if dead != c.dead || len(words) < len(c.words) || words[:len(c.words)] != c.words {
				t.Fatalf("nodeDead = %v %q, want %v %q", dead, words, c.dead, c.words)
			}
		})
	}
}

// One round's answers, as record keeps them: an answer as the node resets
// the silence and counts as alive; another machine's answer resets the
// silence without counting as alive; only rounds of failures alone make
// silence, from the first of them; new addresses start it again.
func TestAliveRecord(t *testing.T) {
	t0 := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	clk := &stepClock{now: t0}
	w := newAliveWatch(clk, time.Second)
	tg := []target{{node: "n1", uid: "uid-1", addrs: []string{"10.0.0.1:61682"}}}
	round := func(res probeResult) AliveSeen {
		w.record(tg, []probeResult{res})
		clk.now = clk.now.Add(time.Minute)
		return w.seen["n1"]
	}
	if a := round(probeResult{silence: "refused"}); !a.SilentSince.Equal(t0) || a.Silence != "refused" {
		t.Fatalf("first failure: %+v", a)
	}
	if a := round(probeResult{silence: "timeout"}); !a.SilentSince.Equal(t0) || a.Silence != "timeout" {
		t.Fatalf("second failure: %+v", a)
	}
	if a := round(probeResult{other: "node n2"}); !a.SilentSince.IsZero() || !a.AliveAt.IsZero() || a.Other != "node n2" {
		t.Fatalf("another machine: %+v", a)
	}
	if a := round(probeResult{alive: "node n1"}); !a.AliveAt.Equal(t0.Add(3*time.Minute)) || !a.SilentSince.IsZero() || a.Other != "" {
		t.Fatalf("alive: %+v", a)
	}
	round(probeResult{silence: "refused"})
	tg[0].addrs = []string{"10.0.0.9:61682"}
	if a := round(probeResult{silence: "refused"}); !a.SilentSince.Equal(t0.Add(5*time.Minute)) || !a.AliveAt.Equal(t0.Add(3*time.Minute)) {
		t.Fatalf("new addresses: %+v", a)
	}
	w.record(nil, nil)
	if len(w.seen) != 0 {
		t.Fatalf("a node no longer gone is remembered: %+v", w.seen)
	}
}

type stepClock struct{ now time.Time }

func (c *stepClock) Now() time.Time                  { return c.now }
func (c *stepClock) Since(t time.Time) time.Duration { return c.now.Sub(t) }
