package datastore_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/sandboxipam/sandboxipam/ipamd/datastore"
)

// Readiness is the one answer to "would an ADD for a new pod get an
// address now" (STATUS, /readyz and ipamctl ask it): for every reason the
// store refuses, it names exactly that reason, and it says ready exactly
// when Assign of a new key succeeds. The CNI STATUS verb once answered
// ready while every ADD was refused as fenced, and a test that waited on
// it raced the pool source's start fence.
func TestReadinessAgreesWithAssignForEveryReason(t *testing.T) {
	cases := []struct {
		name string
		// setup returns the store in the state under test.
		setup       func(t *testing.T) *datastore.Store
		wantReasons []string
		wantFree    uint64
		wantErr     error
	}{{
		name:     "ready",
		setup:    func(t *testing.T) *datastore.Store { return newFixture(t, "198.18.0.0/29").open() },
		wantFree: 6,
	}, {
		name: "unproven before any listing",
		setup: func(t *testing.T) *datastore.Store {
			f := newFixture(t, "198.18.0.0/29")
			f.proveWhenMissing = true
			return f.open()
		},
		wantReasons: []string{"the datastore is unproven (no trusted checkpoint): waiting for a successful runtime listing (the adapter has not listed this node's sandboxes yet)"},
		wantErr:     datastore.ErrUnproven,
	}, {
		name: "unproven, naming the pod it waits for",
		setup: func(t *testing.T) *datastore.Store {
			s := lose(t, newFixture(t, "198.18.0.0/29"))
			observe(t, s, evidence(listing(), "sandbox c (default/c)"))
			return s
		},
		wantReasons: []string{"the datastore is unproven (no trusted checkpoint): waiting for sandbox c (default/c)"},
		wantErr:     datastore.ErrUnproven,
	}, {
		name: "fenced",
		setup: func(t *testing.T) *datastore.Store {
			s := newFixture(t, "198.18.0.0/29").open()
			s.SetFenced("ipamd's Lease was last renewed 2m10s ago")
			return s
		},
		wantReasons: []string{"no new address is handed out: ipamd's Lease was last renewed 2m10s ago"},
		wantFree:    6,
		wantErr:     datastore.ErrFenced,
	}, {
		name: "fenced and unproven: both named",
		setup: func(t *testing.T) *datastore.Store {
			f := newFixture(t, "198.18.0.0/29")
			f.proveWhenMissing = true
			s := f.open()
			s.SetFenced("not yet renewed")
			return s
		},
		wantReasons: []string{
			"the datastore is unproven (no trusted checkpoint): waiting for a successful runtime listing (the adapter has not listed this node's sandboxes yet)",
			"no new address is handed out: not yet renewed",
		},
		wantErr: datastore.ErrUnproven,
	}, {
		name: "pool waiting for its first range",
		setup: func(t *testing.T) *datastore.Store {
			s := newFixture(t).open()
			s.SetPoolWaiting("Node node-1's spec.podCIDRs")
			return s
		},
		wantReasons: []string{"the pool has no range yet: waiting for Node node-1's spec.podCIDRs"},
		wantErr:     datastore.ErrPoolNotReady,
	}, {
		name: "exhausted",
		setup: func(t *testing.T) *datastore.Store {
			return fillUp(t, newFixture(t, "198.18.0.0/30").open())
		},
		wantReasons: []string{"address pool exhausted: no free ipv4 address"},
		wantErr:     datastore.ErrPoolExhausted,
	}, {
		name: "exhausted while the source grows the pool",
		setup: func(t *testing.T) *datastore.Store {
			s := fillUp(t, newFixture(t, "198.18.0.0/30").open())
			s.SetGrowthWaiting("a block claimed from IPPool default")
			return s
		},
		wantReasons: []string{"address pool exhausted: no free ipv4 address; waiting for a block claimed from IPPool default"},
		wantErr:     datastore.ErrPoolNotReady,
	}, {
		name: "dual-stack with no IPv6 address left",
		setup: func(t *testing.T) *datastore.Store {
			return fillUp(t, newFixture(t, "198.18.0.0/28", "fd00:18::/126").open())
		},
		wantReasons: []string{"address pool exhausted: no free ipv6 address"},
		wantErr:     datastore.ErrPoolExhausted,
	}, {
		name: "closed",
		setup: func(t *testing.T) *datastore.Store {
			s := newFixture(t, "198.18.0.0/29").open()
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			return s
		},
		wantReasons: []string{"the datastore is closed: ipamd is stopping"},
		wantErr:     datastore.ErrClosed,
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := tc.setup(t)
			r := s.Readiness()
			if !slices.Equal(r.Reasons, tc.wantReasons) || r.Ready() != (len(tc.wantReasons) == 0) {
				t.Fatalf("Readiness = %q (ready %v), want %q", r.Reasons, r.Ready(), tc.wantReasons)
			}
			if tc.wantErr == nil && r.Free != tc.wantFree {
				t.Fatalf("Readiness.Free = %d, want %d", r.Free, tc.wantFree)
			}
			_, err := s.Assign(context.Background(), key("new-pod"), pod("new-pod"))
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("Assign of a new pod = %v, want %v: Readiness said %q", err, tc.wantErr, r.Reasons)
			}
			if err == nil && s.Readiness().Free != tc.wantFree-1 {
				t.Fatalf("Free after one ADD = %d, want %d", s.Readiness().Free, tc.wantFree-1)
			}
		})
	}
}

// fillUp assigns new pods until the store refuses one as exhausted.
func fillUp(t *testing.T, s *datastore.Store) *datastore.Store {
	t.Helper()
	for i := range 1000 {
		_, err := s.Assign(context.Background(), key(fmt.Sprintf("fill-%d", i)), pod(fmt.Sprintf("fill-%d", i)))
		if errors.Is(err, datastore.ErrPoolExhausted) {
			return s
		}
		if err != nil {
			t.Fatalf("fill: %v", err)
		}
	}
	t.Fatal("the pool never ran out")
	return nil
}
