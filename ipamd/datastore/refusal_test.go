package datastore_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/sandboxipam/sandboxipam/ipamd/datastore"
)

// With 100 pods unaccounted for, an ADD's refusal names the first 3 in
// sorted order and counts the other 97: a bounded message, where it
// once named all 100 (some 600 bytes each) into kubelet's log and the
// pod's events on every pod start. The proof state (/readyz, ipamctl
// check) keeps the whole list.
func TestUnprovenRefusalNamesTheFirstFewAndCountsTheRest(t *testing.T) {
	f := newFixture(t, "198.18.0.0/29")
	s := lose(t, f)
	pad := strings.Repeat("x", 560) // an item is about 600 bytes
	var unaccounted []string
	for i := 99; i >= 0; i-- { // given out of order
		unaccounted = append(unaccounted, fmt.Sprintf("sandbox ipam-pod-%03d (default/ipam-pod-%03d) %s", i, i, pad))
	}
	observe(t, s, evidence(listing(), unaccounted...))
	_, err := s.Assign(context.Background(), key("new"), pod("new"))
	if !errors.Is(err, datastore.ErrUnproven) {
		t.Fatalf("Assign = %v, want ErrUnproven", err)
	}
	msg := err.Error()
	if len(msg) > 2500 {
		t.Fatalf("refusal of %d bytes, want at most 2500 (3 items and a count)", len(msg))
	}
	for i := range 100 {
		named := strings.Contains(msg, fmt.Sprintf("sandbox ipam-pod-%03d ", i))
		if named != (i < 3) {
			t.Fatalf("refusal names ipam-pod-%03d: %v; want only the first 3 in sorted order named:\n%s", i, named, msg)
		}
	}
	if !strings.Contains(msg, "... and 97 more; see ipamctl check or /readyz") {
		t.Fatalf("refusal does not count the other 97:\n%s", msg)
	}
	if w := s.View().Proof.Waiting; len(w) != 100 {
		t.Fatalf("proof state names %d, want all 100", len(w))
	}
}
