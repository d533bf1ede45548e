package datastore_test

import (
	"slices"
	"testing"
	"time"

	"github.com/sandboxipam/sandboxipam/ipamd/datastore"
	"github.com/sandboxipam/sandboxipam/ipamd/ipsource"
)

func census(s *datastore.Store, group string) map[datastore.AddressState]int {
	out := map[datastore.AddressState]int{}
	for k, n := range s.View().Census() {
		if k.Group == group && k.Family == "ipv4" {
			out[k.State] = n
		}
	}
	return out
}

// TestCensusAgreesWithStats: the per-group, per-family census counts what
// Stats counts, every state present even at zero.
func TestCensusAgreesWithStats(t *testing.T) {
	f := newFixture(t, "10.1.0.0/29")
	s := f.open()
	mustAssign(t, s, key("a"), pod("a"), "10.1.0.1")
	mustAssign(t, s, key("b"), pod("b"), "10.1.0.2")
	mustRelease(t, s, key("a"), "10.1.0.1")
	st := s.Stats()
	got := census(s, "static")
	want := map[datastore.AddressState]int{datastore.StateFree: st.Free, datastore.StateAssigned: 1, datastore.StateCooling: 1,
		datastore.StateQuarantined: 0, datastore.StateUnproven: 0}
	if len(got) != len(want) {
		t.Fatalf("census %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Fatalf("census %v, want %v (stats %+v)", got, want, st)
		}
	}
	if st.Free < 1 || got[datastore.StateFree]+2 != st.Total {
		t.Fatalf("census %v does not add up to the pool's %d", got, st.Total)
	}
	f.clock.Advance(time.Hour)
	if got := census(s, "static"); got[datastore.StateCooling] != 0 || got[datastore.StateFree] != st.Free+1 {
		t.Fatalf("after the cooldown: census %v", got)
	}
}

// TestCensusUnprovenAfterALostCheckpoint: an unproven store's whole pool
// is unproven, not quarantined.
func TestCensusUnprovenAfterALostCheckpoint(t *testing.T) {
	f := newFixture(t, "10.1.0.0/29")
	f.proveWhenMissing = true
	s := f.open()
	st := s.Stats()
	got := census(s, "static")
	if st.Total == 0 || got[datastore.StateUnproven] != st.Total || got[datastore.StateQuarantined] != 0 || got[datastore.StateFree] != 0 {
		t.Fatalf("census %v of an unproven store, stats %+v", got, st)
	}
}

// TestViewIsOneConsistentReadModel: the totals, the groups, the blocks,
// the usage and the proof of one View describe the same pool.
func TestViewIsOneConsistentReadModel(t *testing.T) {
	f := newFixture(t, "10.1.0.0/29", "fd00:1::/126")
	s := f.open()
	mustAssign(t, s, key("a"), pod("a"), "10.1.0.1")
	mustAssign(t, s, key("b"), pod("b"), "10.1.0.2")
	mustRelease(t, s, key("a"), "10.1.0.1")
	v := s.View()
	if want := (datastore.Stats{Total: 9, Assigned: 1, Free: 5, Cooling: 2}); v.Stats != want {
		t.Fatalf("Stats %+v, want %+v", v.Stats, want)
	}
	wantGroups := []datastore.GroupCount{
		{Group: "static", Family: "ipv4", Total: 6, Assigned: 1, Cooling: 1, Free: 4},
		{Group: "static", Family: "ipv6", Total: 3, Assigned: 1, Cooling: 1, Free: 1}, // fd00:1:: is never handed out
	}
	if !slices.Equal(v.Groups, wantGroups) {
		t.Fatalf("Groups %+v, want %+v", v.Groups, wantGroups)
	}
	if len(v.Ranges) != 2 || v.Ranges[0].Size != 6 || v.Ranges[0].Assigned != 1 || v.Ranges[0].Cooling != 1 ||
		v.Ranges[1].Size != 3 || v.Ranges[1].Assigned != 1 || v.Ranges[1].Cooling != 1 {
		t.Fatalf("Ranges %+v", v.Ranges)
	}
	if u := v.Usage(); !slices.Equal(u, []ipsource.GroupUsage{{Group: "static", Total: 9, Assigned: 2, Cooling: 2}}) {
		t.Fatalf("Usage %+v", u)
	}
	if v.Proof.Unproven || v.Proof.Quarantined != 0 || !v.At.Equal(f.clock.Now()) {
		t.Fatalf("Proof %+v at %v", v.Proof, v.At)
	}
}
