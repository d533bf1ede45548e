package datastore_test

import (
	"testing"
	"time"

	"github.com/sandboxipam/sandboxipam/ipamd/datastore"
)

func census(s *datastore.Store, group string) map[datastore.AddressState]int {
	out := map[datastore.AddressState]int{}
	for k, n := range s.Census() {
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
