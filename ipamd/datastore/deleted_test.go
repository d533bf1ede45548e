package datastore_test

import (
	"context"
	"errors"
	"net/netip"
	"testing"

	"github.com/sandboxipam/sandboxipam/ipamd/datastore"
	"github.com/sandboxipam/sandboxipam/runtime"
)

// CRI-O keeps reporting a stopped sandbox's address after its CNI DEL. A
// proven store that answered that DEL takes the report as stale: no
// quarantine, and the address is handed out again after the cooldown,
// while the completed pod's sandbox is still listed.
func TestStoppedSandboxReportAfterItsDELIsStale(t *testing.T) {
	f := newFixture(t, "198.18.0.0/30") // .1 and .2
	s := f.open()
	mustAssign(t, s, key("job"), pod("job"), "198.18.0.1")
	mustAssign(t, s, key("web"), pod("web"), "198.18.0.2")
	mustRelease(t, s, key("job"), "198.18.0.1")
	completed := []runtime.Sandbox{
		{ID: "job", State: runtime.StateNotReady, IPs: []netip.Addr{netip.MustParseAddr("198.18.0.1")}},
		{ID: "web", State: runtime.StateReady, IPs: []netip.Addr{netip.MustParseAddr("198.18.0.2")}},
	}
	if rep := observe(t, s, evidence(completed)); rep.Conflicts != 0 || rep.Quarantined != 0 || rep.Adopted != 0 {
		t.Fatalf("ObserveReport = %+v, want the stopped sandbox's report ignored", rep)
	}
	if _, err := s.Assign(context.Background(), key("next"), pod("next")); !errors.Is(err, datastore.ErrPoolExhausted) {
		t.Fatalf("Assign during the cooldown = %v, want exhausted (.1 cools down)", err)
	}
	f.clock.Advance(datastore.DefaultCooldown)
	if rep := observe(t, s, evidence(completed)); rep.Conflicts != 0 || rep.Quarantined != 0 {
		t.Fatalf("ObserveReport after the cooldown = %+v, want no quarantine", rep)
	}
	mustAssign(t, s, key("next"), pod("next"), "198.18.0.1")
}

// Only a stopped sandbox's report is stale, and only after this store
// answered its DEL: a running sandbox reporting a released address, or a
// stopped one whose DEL never came here, still quarantines it.
func TestReportsWithoutAnsweredDELStillQuarantine(t *testing.T) {
	f := newFixture(t, "198.18.0.0/29")
	s := f.open()
	mustAssign(t, s, key("a"), pod("a"), "198.18.0.1")
	mustRelease(t, s, key("a"), "198.18.0.1")
	f.clock.Advance(datastore.DefaultCooldown)
	claims := []runtime.Sandbox{
		{ID: "a", State: runtime.StateReady, IPs: []netip.Addr{netip.MustParseAddr("198.18.0.1")}},
		{ID: "other", State: runtime.StateNotReady, IPs: []netip.Addr{netip.MustParseAddr("198.18.0.2")}},
	}
	if rep := observe(t, s, evidence(claims)); rep.Conflicts != 2 || rep.Quarantined != 2 {
		t.Fatalf("ObserveReport = %+v, want .1 (running claimant) and .2 (no DEL answered) quarantined", rep)
	}
	// Once the listing no longer shows a, its DEL is forgotten: a later
	// stopped sandbox under that ID would hold what it reports.
	observe(t, s, evidence(nil))
	b, err := s.Assign(context.Background(), key("b"), pod("b"))
	if err != nil {
		t.Fatal(err)
	}
	stale := []runtime.Sandbox{
		{ID: "b", State: runtime.StateReady, IPs: []netip.Addr{b.Address.IP}},
		{ID: "a", State: runtime.StateNotReady, IPs: []netip.Addr{b.Address.IP}},
	}
	if rep := observe(t, s, evidence(stale)); rep.Conflicts != 1 {
		t.Fatalf("ObserveReport = %+v, want a's report a conflict once its DEL was forgotten", rep)
	}
}

// That this store answered a DEL survives a restart, from the journal
// (a crash right after the DEL) and from a snapshot (a clean close): the
// stopped sandbox's report stays stale, never a quarantine. Forgotten,
// durably, once a listing no longer shows the sandbox.
func TestAnsweredDELSurvivesRestart(t *testing.T) {
	f := newFixture(t, "198.18.0.0/30") // .1 and .2
	s := f.open()
	mustAssign(t, s, key("job"), pod("job"), "198.18.0.1")
	mustAssign(t, s, key("web"), pod("web"), "198.18.0.2")
	mustRelease(t, s, key("job"), "198.18.0.1")
	f.clock.Advance(datastore.DefaultCooldown)
	completed := []runtime.Sandbox{
		{ID: "job", State: runtime.StateNotReady, IPs: []netip.Addr{netip.MustParseAddr("198.18.0.1")}},
		{ID: "web", State: runtime.StateReady, IPs: []netip.Addr{netip.MustParseAddr("198.18.0.2")}},
	}
	crashed := crashCopy(t, f)
	if rep := observe(t, crashed, evidence(completed)); rep.Conflicts != 0 || rep.Quarantined != 0 {
		t.Fatalf("after a crash: ObserveReport = %+v, want the stopped sandbox's report stale", rep)
	}
	mustAssign(t, crashed, key("next"), pod("next"), "198.18.0.1")
	s = f.reopen(s)
	if rep := observe(t, s, evidence(completed)); rep.Conflicts != 0 || rep.Quarantined != 0 {
		t.Fatalf("after a clean restart: ObserveReport = %+v, want the stopped sandbox's report stale", rep)
	}
	if got := s.DeletedSandboxes(); len(got) != 1 {
		t.Fatalf("DeletedSandboxes = %v, want job's", got)
	}
	observe(t, s, evidence(completed[1:]))
	s = f.reopen(s)
	if got := s.DeletedSandboxes(); len(got) != 0 {
		t.Fatalf("DeletedSandboxes after a listing without job and a restart = %v, want none", got)
	}
}
