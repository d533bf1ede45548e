package datastore_test

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/sandboxipam/sandboxipam/ipamd/checkpoint"
	"github.com/sandboxipam/sandboxipam/ipamd/datastore"
	"github.com/sandboxipam/sandboxipam/ipamd/ipsource"
	"github.com/sandboxipam/sandboxipam/ipamd/ipsource/static"
)

func nodeBlocks(cidrs ...string) []ipsource.Range {
	out := make([]ipsource.Range, 0, len(cidrs))
	for _, c := range cidrs {
		out = append(out, static.Block(netip.MustParsePrefix(c), "node"))
	}
	return out
}

// rangeStates renders the pool as "prefix[retiring] assigned" entries.
func rangeStates(s *datastore.Store) string {
	var out []string
	for _, r := range s.Ranges() {
		state := ""
		if r.Retiring {
			state = " retiring"
		}
		out = append(out, fmt.Sprintf("%s%s a=%d", r.Range.Prefix, state, r.Assigned))
	}
	return strings.Join(out, ", ")
}

// A range the node no longer has: nothing more is handed out of it, its
// held addresses stay held and shown, and it leaves once none is held.
func TestRetiringRanges(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name string
		// old holds two pods (first two addresses of each family), then
		// the node's ranges become current.
		old, current []string
		// wantRanges right after SetNodeRanges; wantAfter once both pods
		// are gone.
		wantRanges, wantAfter string
		// wantNext is the next address handed out, per family.
		wantNext []string
	}{
		{name: "new range, old one retiring",
			old: []string{"198.18.1.0/30"}, current: []string{"198.18.2.0/30"},
			wantRanges: "198.18.1.0/30 retiring a=2, 198.18.2.0/30 a=0",
			wantAfter:  "198.18.2.0/30 a=0", wantNext: []string{"198.18.2.1"}},
		{name: "same range kept",
			old: []string{"198.18.1.0/29"}, current: []string{"198.18.1.0/29"},
			wantRanges: "198.18.1.0/29 a=2",
			wantAfter:  "198.18.1.0/29 a=0", wantNext: []string{"198.18.1.3"}},
		{name: "overlapping new range: the old one leaves at once, its held addresses stay held",
			old: []string{"198.18.1.0/29"}, current: []string{"198.18.1.0/28"},
			wantRanges: "198.18.1.0/28 a=2",
			wantAfter:  "198.18.1.0/28 a=0", wantNext: []string{"198.18.1.3"}},
		{name: "dual-stack, both families retire",
			old: []string{"198.18.1.0/30", "fd00:1::/126"}, current: []string{"198.18.2.0/30", "fd00:2::/126"},
			wantRanges: "198.18.1.0/30 retiring a=2, 198.18.2.0/30 a=0, fd00:1::/126 retiring a=2, fd00:2::/126 a=0",
			wantAfter:  "198.18.2.0/30 a=0, fd00:2::/126 a=0", wantNext: []string{"198.18.2.1", "fd00:2::1"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			s := f.open()
			if err := s.SetNodeRanges(ctx, datastore.NodeRanges{Group: "node", Name: "node-1", UID: "uid-1", Current: nodeBlocks(tc.old...)}); err != nil {
				t.Fatal(err)
			}
			held := map[string][]netip.Addr{}
			for _, k := range []string{"a", "b"} {
				a, err := s.Assign(ctx, key(k), pod(k))
				if err != nil {
					t.Fatal(err)
				}
				held[k] = a.IPs()
			}
			if err := s.SetNodeRanges(ctx, datastore.NodeRanges{Group: "node", Name: "node-1", UID: "uid-2", Current: nodeBlocks(tc.current...)}); err != nil {
				t.Fatal(err)
			}
			if got := rangeStates(s); got != tc.wantRanges {
				t.Fatalf("ranges = %s, want %s", got, tc.wantRanges)
			}
			a, err := s.Assign(ctx, key("new"), pod("new"))
			if err != nil {
				t.Fatal(err)
			}
			if got := fmt.Sprint(a.IPs()); got != fmt.Sprint(addrs(tc.wantNext...)) {
				t.Fatalf("new pod got %s, want %v", got, tc.wantNext)
			}
			for _, ip := range a.IPs() {
				if !slices.ContainsFunc(tc.current, func(c string) bool { return netip.MustParsePrefix(c).Contains(ip) }) {
					t.Fatalf("new pod got %s outside the current ranges %v", ip, tc.current)
				}
			}
			// Held old addresses are still the same pods'.
			for k, ips := range held {
				got, ok := s.Lookup(key(k))
				if !ok || !slices.Equal(got.IPs(), ips) {
					t.Fatalf("pod %s holds %v (found %v), want %v", k, got.IPs(), ok, ips)
				}
			}
			for _, k := range []string{"a", "b", "new"} {
				if _, _, err := s.Release(ctx, key(k)); err != nil {
					t.Fatal(err)
				}
			}
			if got := rangeStates(s); got != tc.wantAfter {
				t.Fatalf("after release: ranges = %s, want %s", got, tc.wantAfter)
			}
		})
	}
}

func addrs(texts ...string) []netip.Addr {
	out := make([]netip.Addr, len(texts))
	for i, t := range texts {
		out[i] = netip.MustParseAddr(t)
	}
	return out
}

// The record and the retiring ranges survive a restart: the reopened
// store reports them, and SetNodeRanges with them puts the retiring
// block back as retiring, its held address still held.
func TestNodeRecordSurvivesRestart(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	s := f.open()
	if _, ok := s.NodeRecord(); ok {
		t.Fatal("a new store has a node record")
	}
	if err := s.SetNodeRanges(ctx, datastore.NodeRanges{Group: "node", Name: "node-1", UID: "uid-1", Current: nodeBlocks("198.18.1.0/30")}); err != nil {
		t.Fatal(err)
	}
	mustAssign(t, s, key("a"), pod("a"), "198.18.1.1")
	if err := s.SetNodeRanges(ctx, datastore.NodeRanges{Group: "node", Name: "node-1", UID: "uid-2", Current: nodeBlocks("198.18.2.0/30")}); err != nil {
		t.Fatal(err)
	}
	s = f.reopen(s)
	rec, ok := s.NodeRecord()
	want := datastore.NodeRecord{Name: "node-1", UID: "uid-2",
		PodCIDRs: []netip.Prefix{netip.MustParsePrefix("198.18.2.0/30")}, Retiring: []netip.Prefix{netip.MustParsePrefix("198.18.1.0/30")}}
	if !ok || fmt.Sprint(rec) != fmt.Sprint(want) {
		t.Fatalf("NodeRecord = %+v, %v; want %+v", rec, ok, want)
	}
	st, err := checkpoint.Load(f.path)
	if err != nil || st.File.Node == nil || st.File.Node.UID != "uid-2" {
		t.Fatalf("checkpoint node record = %+v, %v", st.File.Node, err)
	}
	if err := s.SetNodeRanges(ctx, datastore.NodeRanges{Group: "node", Name: rec.Name, UID: rec.UID,
		Current: nodeBlocks("198.18.2.0/30"), Retiring: nodeBlocks("198.18.1.0/30")}); err != nil {
		t.Fatal(err)
	}
	if got := rangeStates(s); got != "198.18.1.0/30 retiring a=1, 198.18.2.0/30 a=0" {
		t.Fatalf("ranges after restart = %s", got)
	}
	mustAssign(t, s, key("b"), pod("b"), "198.18.2.1")
	mustAssign(t, s, key("c"), pod("c"), "198.18.2.2")
	if _, err := s.Assign(ctx, key("d"), pod("d")); !errors.Is(err, datastore.ErrPoolExhausted) {
		t.Fatalf("third pod: err = %v, want exhausted (the retiring block hands out nothing)", err)
	}
	mustRelease(t, s, key("a"), "198.18.1.1")
	if got := rangeStates(s); got != "198.18.2.0/30 a=2" {
		t.Fatalf("ranges after the last old pod went = %s", got)
	}
	// The Node deleted: no current range, everything retires, nothing is
	// handed out, and the pool waits.
	if err := s.SetNodeRanges(ctx, datastore.NodeRanges{Group: "node", Name: "node-1"}); err != nil {
		t.Fatal(err)
	}
	if got := rangeStates(s); got != "198.18.2.0/30 retiring a=2" {
		t.Fatalf("ranges after the Node went = %s", got)
	}
	s.SetPoolWaiting("Node node-1's spec.podCIDRs")
	if _, err := s.Assign(ctx, key("e"), pod("e")); !errors.Is(err, datastore.ErrPoolNotReady) {
		t.Fatalf("Assign with only retiring ranges = %v, want ErrPoolNotReady", err)
	}
}

// An empty pool waiting for its source answers ADD with ErrPoolNotReady
// naming what it waits for.
func TestPoolWaiting(t *testing.T) {
	ctx := context.Background()
	s := newFixture(t).open()
	s.SetPoolWaiting("Node node-1's spec.podCIDRs")
	_, err := s.Assign(ctx, key("a"), pod("a"))
	if !errors.Is(err, datastore.ErrPoolNotReady) || !strings.Contains(err.Error(), "waiting for Node node-1's spec.podCIDRs") {
		t.Fatalf("Assign = %v, want ErrPoolNotReady naming the Node", err)
	}
	if got := s.PoolWaiting(); got != "Node node-1's spec.podCIDRs" {
		t.Fatalf("PoolWaiting = %q", got)
	}
	if err := s.SetNodeRanges(ctx, datastore.NodeRanges{Group: "node", Name: "node-1", UID: "uid-1", Current: nodeBlocks("198.18.1.0/30")}); err != nil {
		t.Fatal(err)
	}
	if got := s.PoolWaiting(); got != "" {
		t.Fatalf("PoolWaiting with ranges = %q", got)
	}
	mustAssign(t, s, key("a"), pod("a"), "198.18.1.1")
}
