package nodecheck

import (
	"context"
	"errors"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/sandboxipam/sandboxipam/ipamd/api/hostveth"
	"github.com/sandboxipam/sandboxipam/ipamd/datastore"
	"github.com/sandboxipam/sandboxipam/ipamd/hostlinks"
	"github.com/sandboxipam/sandboxipam/ipamd/ipsource"
	"github.com/sandboxipam/sandboxipam/runtime"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func assignment(sandbox, ip string, at time.Time) datastore.Assignment {
	return datastore.Assignment{Key: datastore.Key{Network: "n", SandboxID: sandbox, IfName: "eth0"},
		Pod: datastore.Pod{Name: "pod-" + sandbox, Namespace: "default"}, Address: ipsource.Address{IP: netip.MustParseAddr(ip)}, AssignedAt: at}
}

func sandbox(id string, ips ...string) runtime.Sandbox {
	sb := runtime.Sandbox{ID: id, Name: "pod-" + id, Namespace: "default", State: runtime.StateReady, CreatedAt: t0}
	for _, ip := range ips {
		sb.IPs = append(sb.IPs, netip.MustParseAddr(ip))
	}
	return sb
}

func link(sandbox string) string { return hostveth.Name("sbx", sandbox, "eth0") }

func addrs(ips ...string) []netip.Addr {
	var out []netip.Addr
	for _, ip := range ips {
		out = append(out, netip.MustParseAddr(ip))
	}
	return out
}

// agreeing is a node where all three sources agree on a and b.
func agreeing() Input {
	return Input{
		Assignments: []datastore.Assignment{assignment("a", "10.0.0.1", t0), assignment("b", "10.0.0.2", t0)},
		Sandboxes:   []runtime.Sandbox{sandbox("a", "10.0.0.1"), sandbox("b")},
		Node:        &hostlinks.Snapshot{Links: map[string][]netip.Addr{link("a"): addrs("10.0.0.1"), link("b"): addrs("10.0.0.2")}},
		VethPrefix:  "sbx", Now: t0.Add(time.Hour), Settle: time.Minute,
	}
}

func kinds(r Report) []string {
	var out []string
	for _, d := range r.Disagreements {
		out = append(out, string(d.Kind)+" "+d.Address+" "+d.SandboxID)
	}
	return out
}

func expect(t *testing.T, r Report, want ...string) {
	t.Helper()
	got := kinds(r)
	if len(got) != len(want) {
		t.Fatalf("disagreements %q, want %q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("disagreements %q, want %q", got, want)
		}
	}
}

func TestAgreeingNodeHasNoDisagreement(t *testing.T) {
	r := Compare(agreeing())
	expect(t, r)
	if r.Assignments != 2 || r.Sandboxes != 2 || r.PodLinks != 2 {
		t.Fatalf("counts %+v", r)
	}
}

func TestEachDisagreementIsFoundWithItsAddress(t *testing.T) {
	t.Run("route deleted", func(t *testing.T) {
		in := agreeing()
		in.Node.Links[link("b")] = nil
		expect(t, Compare(in), "assigned-no-route 10.0.0.2 b")
	})
	t.Run("veth gone", func(t *testing.T) {
		in := agreeing()
		delete(in.Node.Links, link("b"))
		expect(t, Compare(in), "assigned-no-route 10.0.0.2 b")
	})
	t.Run("IPAM-only pod has no veth of ours", func(t *testing.T) {
		in := agreeing()
		delete(in.Node.Links, link("b"))
		in.Assignments[1].Wiring = datastore.WiringIPAMOnly
		expect(t, Compare(in))
	})
	t.Run("stray route", func(t *testing.T) {
		in := agreeing()
		in.Node.Links[link("a")] = addrs("10.0.0.1", "10.0.0.9")
		expect(t, Compare(in), "route-unheld 10.0.0.9 a")
	})
	t.Run("sandbox removed behind ipamd's back", func(t *testing.T) {
		in := agreeing()
		in.Sandboxes = in.Sandboxes[:1]
		expect(t, Compare(in), "sandbox-gone 10.0.0.2 b")
	})
	t.Run("sandbox without address", func(t *testing.T) {
		in := agreeing()
		in.Sandboxes = append(in.Sandboxes, sandbox("c"))
		expect(t, Compare(in), "sandbox-no-address  c")
	})
	t.Run("two holders", func(t *testing.T) {
		in := agreeing()
		in.Node.Links["sbxforeign"] = addrs("10.0.0.1")
		expect(t, Compare(in), "two-holders 10.0.0.1 ")
	})
	t.Run("a stopped sandbox still reports the IP another pod has now, after its DEL", func(t *testing.T) {
		// CRI-O keeps reporting it; the store answered the DEL, so the
		// report is stale, and the reconciler leaves it alone too.
		in := agreeing()
		old := sandbox("old", "10.0.0.2")
		old.State = runtime.StateNotReady
		in.Sandboxes = append(in.Sandboxes, old)
		in.Deleted = map[string]struct{}{"old": {}}
		expect(t, Compare(in))
	})
	t.Run("a stopped sandbox reports the IP another pod has, and no DEL came", func(t *testing.T) {
		// The reconciler quarantines 10.0.0.2 here: the check must say so.
		in := agreeing()
		old := sandbox("old", "10.0.0.2")
		old.State = runtime.StateNotReady
		in.Sandboxes = append(in.Sandboxes, old)
		r := Compare(in)
		expect(t, r, "two-holders 10.0.0.2 ")
		if w := r.Disagreements[0].Words; w != "10.0.0.2 has 2 holders: sandbox b (by ipamd), sandbox old (by runtime, stopped)" {
			t.Fatalf("words %q", w)
		}
	})
	t.Run("runtime reports another IP", func(t *testing.T) {
		in := agreeing()
		in.Sandboxes[0].IPs = addrs("10.0.0.7")
		expect(t, Compare(in), "runtime-ip-differs 10.0.0.7 a")
	})
	t.Run("netns lacks the address", func(t *testing.T) {
		in := agreeing()
		in.Sandboxes[1].NetNS = "/run/netns/b"
		in.NetNS = func(path string) ([]netip.Addr, error) {
			if path != "/run/netns/b" {
				t.Fatalf("read netns %s", path)
			}
			return addrs("10.0.0.5"), nil
		}
		expect(t, Compare(in), "not-in-netns 10.0.0.2 b")
	})
}

func TestYoungOnesSettleAndUnreadSourcesAreNoted(t *testing.T) {
	in := agreeing()
	in.Assignments = append(in.Assignments, assignment("new", "10.0.0.3", in.Now.Add(-time.Second)))
	in.Sandboxes = append(in.Sandboxes, sandbox("new"))
	r := Compare(in)
	expect(t, r)
	if r.Settling != 1 {
		t.Fatalf("settling %d, want 1 (the young assignment's missing route)", r.Settling)
	}
	in = agreeing()
	in.SandboxesErr, in.Node, in.NodeErr = errors.New("adapter down"), nil, errors.New("netlink: permission denied")
	r = Compare(in)
	expect(t, r)
	want := []NotCompared{{SourceRuntime, "adapter down"}, {SourceKernel, "netlink: permission denied"}}
	if !slices.Equal(r.NotCompared, want) || len(r.Notes) != 0 {
		t.Fatalf("not compared %+v, notes %q; want %+v and no note", r.NotCompared, r.Notes, want)
	}
	// The plugin as IPAM only: nothing of the kernel's to compare, which
	// is a note, not a source the check failed to read.
	in = agreeing()
	in.Node = nil
	r = Compare(in)
	if len(r.NotCompared) != 0 || len(r.Notes) != 1 {
		t.Fatalf("IPAM only: not compared %+v, notes %q; want none and one note", r.NotCompared, r.Notes)
	}
}

func TestRunRetriesWhileAChangeRacesIt(t *testing.T) {
	base := agreeing()
	reads := 0
	src := Sources{
		Assignments: func() []datastore.Assignment {
			reads++
			if reads <= 2 { // the first attempt sees an ADD land between its reads
				return base.Assignments[:reads]
			}
			return base.Assignments
		},
		Sandboxes:  func(context.Context) ([]runtime.Sandbox, error) { return base.Sandboxes, nil },
		Node:       func(context.Context) (hostlinks.Snapshot, error) { return *base.Node, nil },
		VethPrefix: "sbx", Now: func() time.Time { return base.Now },
	}
	out := Run(context.Background(), src)
	if out.Attempts != 2 || out.Raced || len(out.Disagreements) != 0 {
		t.Fatalf("attempts %d raced %v disagreements %v, want a clean second attempt", out.Attempts, out.Raced, kinds(out.Report))
	}
	src.Assignments = func() []datastore.Assignment {
		reads++
		return base.Assignments[:reads%2+1] // every attempt raced
	}
	out = Run(context.Background(), src)
	if out.Attempts != DefaultAttempts || !out.Raced || len(out.Notes) != 1 {
		t.Fatalf("attempts %d raced %v notes %q, want %d raced attempts and a note", out.Attempts, out.Raced, out.Notes, DefaultAttempts)
	}
}
