package proof

import (
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/sandboxipam/sandboxipam/ipamd/datastore/state"
)

func TestTracker(t *testing.T) {
	listing := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	var tr Tracker
	if got := tr.Waiting(); !slices.Equal(got, []string{noListingYet}) {
		t.Errorf("before any listing, waiting for %q", got)
	}
	before := state.Key{Network: "pods", SandboxID: "before", IfName: "eth0"}
	after := state.Key{Network: "pods", SandboxID: "after", IfName: "eth0"}
	other := state.Key{Network: "pods", SandboxID: "other-if", IfName: "net1"}
	tr.NoteDel(before, listing.Add(-time.Second))
	tr.NoteDel(after, listing)
	tr.NoteDel(other, listing.Add(time.Second))
	going := slices.Sorted(maps.Keys(tr.Going("pods", "eth0", listing)))
	if !slices.Equal(going, []string{"after"}) {
		t.Errorf("going = %q, want only the DEL at or after the listing's start, of its interface", going)
	}
	if !tr.Released(before) || tr.Released(state.Key{Network: "pods", SandboxID: "never", IfName: "eth0"}) {
		t.Error("Released does not say which keys had a DEL")
	}
	if tr.Listed([]string{"pod a holds 10.0.0.1"}) {
		t.Error("a listing with something unaccounted proved the store")
	}
	if got := tr.Waiting(); !slices.Equal(got, []string{"pod a holds 10.0.0.1"}) {
		t.Errorf("waiting for %q, want the unaccounted pod", got)
	}
	tr.NoteWaiting("no runtime adapter")
	if got := tr.Waiting(); !slices.Equal(got, []string{"no runtime adapter"}) {
		t.Errorf("waiting for %q, want the noted reason", got)
	}
	if !tr.Listed(nil) {
		t.Error("a listing with nothing unaccounted did not prove the store")
	}
	if tr.Released(before) {
		t.Error("the DELs are remembered after the proof")
	}
}
