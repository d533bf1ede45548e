package join

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sandboxipam/sandboxipam/ipamd/api/hostveth"
	"github.com/sandboxipam/sandboxipam/runtime"
)

var t0 = time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)

func ips(s ...string) []netip.Addr {
	var out []netip.Addr
	for _, x := range s {
		out = append(out, netip.MustParseAddr(x))
	}
	return out
}

func veth(id string) string { return hostveth.Name("sbx", id, "eth0") }

func assignment(id string, addrs ...string) Assignment {
	return Assignment{Network: "pods", SandboxID: id, IfName: "eth0", IPs: ips(addrs...), AssignedAt: t0}
}

func sandbox(id string, ready bool, addrs ...string) runtime.Sandbox {
	sb := runtime.Sandbox{ID: id, State: runtime.StateNotReady, IPs: ips(addrs...)}
	if ready {
		sb.State = runtime.StateReady
	}
	return sb
}

// addressRows renders the address rows as "ip class recorded claims".
func addressRows(v View) []string {
	var out []string
	for _, r := range v.Addresses() {
		var claims []string
		for _, c := range r.Claims {
			claims = append(claims, c.Holder()+"@"+c.Source)
		}
		out = append(out, fmt.Sprintf("%s %s [%s] [%s]", r.IP, r.Class, strings.Join(r.Recorded, ","), strings.Join(claims, ",")))
	}
	return out
}

func TestJoinClassifiesEveryAddress(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   Input
		want []string
	}{{
		name: "all three agree; a recorded address nothing shows is unclaimed",
		in: Input{Assignments: []Assignment{assignment("a", "198.18.0.1"), assignment("b", "198.18.0.2", "fd00::2")},
			Sandboxes: []runtime.Sandbox{sandbox("a", true, "198.18.0.1")},
			Links:     map[string][]netip.Addr{veth("a"): ips("198.18.0.1"), veth("b"): ips("198.18.0.2")}},
		want: []string{
			"198.18.0.1 agreed [a] [sandbox a@runtime,sandbox a@host route via " + veth("a") + "]",
			"198.18.0.2 agreed [b] [sandbox b@host route via " + veth("b") + "]",
			"fd00::2 unclaimed [b] []",
		},
	}, {
		name: "a lost pod's address is unrecorded, its link owned by its listed sandbox",
		in: Input{Sandboxes: []runtime.Sandbox{sandbox("lost", true)},
			Links: map[string][]netip.Addr{veth("lost"): ips("198.18.0.7")}},
		want: []string{"198.18.0.7 unrecorded [] [sandbox lost@host route via " + veth("lost") + "]"},
	}, {
		name: "a link nobody owns routes another pod's address: contested",
		in: Input{Assignments: []Assignment{assignment("a", "198.18.0.1")},
			Links: map[string][]netip.Addr{"sbxforeign": ips("198.18.0.1")}},
		want: []string{"198.18.0.1 contested [a] [link sbxforeign@host route via sbxforeign]"},
	}, {
		name: "a stopped sandbox's report counts until the store answered its DEL",
		in: Input{Assignments: []Assignment{assignment("new", "198.18.0.2")},
			Sandboxes: []runtime.Sandbox{sandbox("old", false, "198.18.0.2"), sandbox("gone", false, "198.18.0.3")},
			Deleted:   map[string]struct{}{"gone": {}}},
		want: []string{"198.18.0.2 contested [new] [sandbox old@runtime]"},
	}, {
		name: "a host-network sandbox claims nothing; an IPv4-mapped report is unmapped; holdings are claimed as given",
		in: Input{Sandboxes: []runtime.Sandbox{{ID: "host", State: runtime.StateReady, HostNetwork: true, IPs: ips("192.0.2.1")},
			sandbox("v4mapped", true, "::ffff:198.18.0.9")},
			Holdings: []Holding{{IP: netip.MustParseAddr("198.18.0.10"), SandboxID: "ns", Ready: true, Source: "network namespace /run/netns/x"}}},
		want: []string{
			"198.18.0.9 unrecorded [] [sandbox v4mapped@runtime]",
			"198.18.0.10 unrecorded [] [sandbox ns@network namespace /run/netns/x]",
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			tc.in.VethPrefix = "sbx"
			if got := addressRows(Join(tc.in)); !slices.Equal(got, tc.want) {
				t.Fatalf("address rows\n got %q\nwant %q", got, tc.want)
			}
		})
	}
}

func TestJoinRowsForAssignmentsSandboxesAndLinks(t *testing.T) {
	v := Join(Input{
		Assignments: []Assignment{assignment("a", "198.18.0.1"), assignment("host", "198.18.0.4"), assignment("gone", "198.18.0.5")},
		Sandboxes:   []runtime.Sandbox{sandbox("a", true), {ID: "host", HostNetwork: true}, sandbox("new", true)},
		Links:       map[string][]netip.Addr{veth("a"): ips("198.18.0.1"), veth("new"): nil, "sbxstray": ips("198.18.0.8")},
		VethPrefix:  "sbx",
	})
	var got []string
	for _, r := range v.Assignments {
		got = append(got, fmt.Sprintf("%s listed=%v pod=%v link=%v %v", r.SandboxID, r.Listed(), r.PodListed(), r.LinkFound, r.LinkIPs))
	}
	want := []string{"a listed=true pod=true link=true [198.18.0.1]", "host listed=true pod=false link=false []", "gone listed=false pod=false link=false []"}
	if !slices.Equal(got, want) {
		t.Fatalf("assignment rows\n got %q\nwant %q", got, want)
	}
	got = nil
	for _, r := range v.Sandboxes {
		got = append(got, fmt.Sprintf("%s %v %s found=%v", r.Sandbox.ID, r.Assignments, r.Link, r.LinkFound))
	}
	want = []string{"a [0] " + veth("a") + " found=true", "new [] " + veth("new") + " found=true"}
	if !slices.Equal(got, want) {
		t.Fatalf("sandbox rows\n got %q\nwant %q", got, want)
	}
	got = nil
	for _, r := range v.Links {
		got = append(got, fmt.Sprintf("%s owner=%q assigned=%v listed=%v", r.Name, r.Owner, r.Assigned, r.Listed))
	}
	want = []string{veth("a") + ` owner="a" assigned=true listed=true`, veth("new") + ` owner="new" assigned=false listed=true`, `sbxstray owner="" assigned=false listed=false`}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("link rows\n got %q\nwant %q", got, want)
	}
	if i, ok := v.Assigned("pods", "gone", "eth0"); !ok || i != 2 {
		t.Fatalf("Assigned(gone) = %d, %v; want 2, true", i, ok)
	}
	if _, ok := v.Assigned("pods", "new", "eth0"); ok {
		t.Fatal("Assigned(new) found an assignment; want none")
	}
}

// Foreign is the datastore's quarantine rule: a claim by anyone but the
// one recording sandbox.
func TestForeignIsAnyClaimButTheRecordingSandboxs(t *testing.T) {
	for _, tc := range []struct {
		row  AddressRow
		want string
	}{
		{AddressRow{Recorded: []string{"a"}, Claims: []Claim{{SandboxID: "a"}}}, ""},
		{AddressRow{Recorded: []string{"a"}}, ""},
		{AddressRow{Recorded: []string{"a"}, Claims: []Claim{{SandboxID: "a"}, {SandboxID: "b"}}}, "b"},
		{AddressRow{Recorded: []string{"a"}, Claims: []Claim{{Link: "sbxx"}}}, "link sbxx"},
		{AddressRow{Claims: []Claim{{SandboxID: "c"}}}, "c"},
	} {
		c, ok := tc.row.Foreign()
		got := ""
		if ok {
			got = c.SandboxID
			if got == "" {
				got = c.Holder()
			}
		}
		if got != tc.want {
			t.Errorf("Foreign(%+v) = %q; want %q", tc.row, got, tc.want)
		}
	}
}
