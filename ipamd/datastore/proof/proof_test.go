package proof

import (
	"fmt"
	"net/netip"
	"slices"
	"testing"

	"github.com/sandboxipam/sandboxipam/ipamd/join"
)

func holding(ip, sandbox string, ready bool) join.Holding {
	return join.Holding{IP: netip.MustParseAddr(ip), SandboxID: sandbox, Ready: ready, Source: "runtime"}
}

func assigned(sandbox string, ips ...string) join.Assignment {
	a := join.Assignment{Network: "pods", SandboxID: sandbox, IfName: "eth0"}
	for _, ip := range ips {
		a.IPs = append(a.IPs, netip.MustParseAddr(ip))
	}
	return a
}

func render(as []Adoption) []string {
	var out []string
	for _, a := range as {
		out = append(out, fmt.Sprintf("%s %v", a.SandboxID, a.IPs))
	}
	return out
}

func TestAdoptions(t *testing.T) {
	for _, tc := range []struct {
		name  string
		in    join.Input
		going []string
		want  []string
	}{{
		name: "one address per family, IPv4 first, in the evidence's order",
		in: join.Input{Holdings: []join.Holding{holding("fd00::7", "a", true), holding("198.18.0.9", "a", true),
			holding("198.18.0.3", "a", true)}},
		want: []string{"a [198.18.0.9 fd00::7]"},
	}, {
		name: "a running sandbox wins an address a stopped one reports",
		in:   join.Input{Holdings: []join.Holding{holding("198.18.0.5", "old", false), holding("198.18.0.5", "new", true)}},
		want: []string{"new [198.18.0.5]"},
	}, {
		name: "an address another sandbox's extra claim passed over is still adopted by its next claimant",
		in: join.Input{Holdings: []join.Holding{holding("198.18.0.1", "a", true), holding("198.18.0.2", "a", true),
			holding("198.18.0.2", "b", true)}},
		want: []string{"a [198.18.0.1]", "b [198.18.0.2]"},
	}, {
		name: "recorded addresses, assigned sandboxes, going sandboxes and unowned links adopt nothing",
		in: join.Input{Assignments: []join.Assignment{assigned("kept", "198.18.0.1")},
			Holdings: []join.Holding{holding("198.18.0.1", "other", true), holding("198.18.0.2", "kept", true),
				holding("198.18.0.3", "deleted", true), {IP: netip.MustParseAddr("198.18.0.4"), Ready: true, Source: "host route via sbxstray"}}},
		going: []string{"deleted"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			going := map[string]struct{}{}
			for _, id := range tc.going {
				going[id] = struct{}{}
			}
			if got := render(Adoptions(join.Join(tc.in), "pods", "eth0", going)); !slices.Equal(got, tc.want) {
				t.Fatalf("Adoptions = %q; want %q", got, tc.want)
			}
		})
	}
}

func TestForeign(t *testing.T) {
	view := join.Join(join.Input{
		Assignments: []join.Assignment{assigned("a", "198.18.0.1"), assigned("b", "198.18.0.2")},
		Holdings: []join.Holding{holding("198.18.0.1", "a", true), holding("198.18.0.2", "x", false),
			holding("198.18.0.3", "y", true), holding("203.0.113.9", "z", true)},
	})
	inPool := func(ip netip.Addr) bool { return netip.MustParsePrefix("198.18.0.0/24").Contains(ip) }
	got := map[string]string{}
	for ip, c := range Foreign(view, inPool) {
		got[ip.String()] = c.SandboxID
	}
	want := map[string]string{"198.18.0.2": "x", "198.18.0.3": "y"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("Foreign = %v; want %v (203.0.113.9 is outside the pool, 198.18.0.1 agrees)", got, want)
	}
}
