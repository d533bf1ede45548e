package datastore_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/sandboxipam/sandboxipam/ipamd/checkpoint"
	"github.com/sandboxipam/sandboxipam/ipamd/datastore"
)

func TestAcknowledgedChangesSurviveReopen(t *testing.T) {
	f := newFixture(t, "198.18.0.0/29")
	s := f.open()
	if r := s.Recovery(); r.Checkpoint != datastore.RecoveryMissing {
		t.Fatalf("first start: Recovery = %+v, want missing", r)
	}
	mustAssign(t, s, key("a"), pod("a"), "198.18.0.1")
	mustAssign(t, s, key("b"), pod("b"), "198.18.0.2")
	mustAssign(t, s, key("c"), pod("c"), "198.18.0.3")
	mustRelease(t, s, key("b"), "198.18.0.2")
	before := s.Assignments()

	s = f.reopen(s)
	if r := s.Recovery(); r.Checkpoint != datastore.RecoveryLoaded || r.Assignments != 2 || r.Quarantined != 0 {
		t.Fatalf("Recovery = %+v, want loaded with 2 assignments", r)
	}
	after := s.Assignments()
	if len(after) != len(before) {
		t.Fatalf("after reopen %v, before %v", after, before)
	}
	for i := range after {
		if !reflect.DeepEqual(after[i], before[i]) || !after[i].AssignedAt.Equal(before[i].AssignedAt) {
			t.Fatalf("after reopen [%d] = %+v, want %+v", i, after[i], before[i])
		}
	}
	// The cursor survives too: allocation continues after .3.
	mustAssign(t, s, key("d"), pod("d"), "198.18.0.4")
}

func TestCoolingSurvivesReopen(t *testing.T) {
	f := newFixture(t, "198.18.0.0/30") // .1 and .2
	s := f.open()
	mustAssign(t, s, key("a"), pod("a"), "198.18.0.1")
	mustAssign(t, s, key("b"), pod("b"), "198.18.0.2")
	mustRelease(t, s, key("a"), "198.18.0.1")
	f.clock.Advance(10 * time.Second)
	s = f.reopen(s)
	if st := s.Stats(); st != (datastore.Stats{Total: 2, Assigned: 1, Cooling: 1}) {
		t.Fatalf("Stats after reopen = %+v, want 1 assigned, 1 cooling", st)
	}
	if _, err := s.Assign(context.Background(), key("c"), pod("c")); !errors.Is(err, datastore.ErrPoolExhausted) {
		t.Fatalf("Assign right after restart: err = %v; the just-released .1 must still cool down", err)
	}
	f.clock.Advance(20 * time.Second)
	mustAssign(t, s, key("c"), pod("c"), "198.18.0.1")
}

func TestConcurrentAssignNeverDuplicatesAndIsDurable(t *testing.T) {
	f := newFixture(t, "198.18.0.0/22") // 1022 addresses
	s := f.open()
	const workers, perWorker = 64, 8
	var mu sync.Mutex
	acked := map[datastore.Key]netip.Addr{}
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Go(func() {
			for i := range perWorker {
				k := key(fmt.Sprintf("w%02d-%d", w, i))
				a, err := s.Assign(context.Background(), k, pod(k.SandboxID))
				if err != nil {
					errs <- err
					return
				}
				mu.Lock()
				acked[k] = a.Address.IP
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	seen := map[netip.Addr]datastore.Key{}
	for k, ip := range acked {
		if other, dup := seen[ip]; dup {
			t.Fatalf("%s handed to both %s and %s", ip, other.SandboxID, k.SandboxID)
		}
		seen[ip] = k
	}
	// Reading the files without closing: every acknowledged assignment is
	// already on disk, in the snapshot or its journal.
	st, err := checkpoint.Load(f.path)
	if err != nil {
		t.Fatal(err)
	}
	onDisk := map[datastore.Key]netip.Addr{}
	for _, a := range st.File.Assignments {
		onDisk[datastore.Key{Network: a.Network, SandboxID: a.SandboxID, IfName: a.IfName}] = a.IPs[0]
	}
	if len(acked) != workers*perWorker || !maps.Equal(onDisk, acked) {
		t.Fatalf("on disk %d assignments, acknowledged %d; they differ", len(onDisk), len(acked))
	}
}

// A write that fails fails its callers; nothing acknowledged before is
// lost, and the next successful write carries every change still in
// memory, so a retried DEL finds the state settled.
func TestFailedWriteLosesNothingAcknowledged(t *testing.T) {
	f := newFixture(t, "198.18.0.0/29")
	s := f.open()
	ctx := context.Background()
	mustAssign(t, s, key("a"), pod("a"), "198.18.0.1")
	mustAssign(t, s, key("b"), pod("b"), "198.18.0.2")

	dir := filepath.Dir(f.path)
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Assign(ctx, key("c"), pod("c")); err == nil {
		t.Fatal("Assign with the checkpoint directory gone succeeded")
	}
	if _, _, err := s.Release(ctx, key("a")); err == nil {
		t.Fatal("Release with the checkpoint directory gone succeeded")
	}
	// A retried DEL of the same key must not claim success while the
	// release is not on disk.
	if _, _, err := s.Release(ctx, key("a")); err == nil {
		t.Fatal("retried Release succeeded though nothing could be written")
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	// The failed ADD kept its address in memory: a retried ADD gets the
	// same one, now durable, and nobody else ever gets it.
	mustAssign(t, s, key("c"), pod("c"), "198.18.0.3")
	if _, found, err := s.Release(ctx, key("a")); err != nil || found {
		t.Fatalf("retried Release = found %v, err %v; want false, nil", found, err)
	}
	mustAssign(t, s, key("d"), pod("d"), "198.18.0.4")

	s = f.reopen(s)
	want := map[string]string{"b/pods/eth0": "198.18.0.2", "c/pods/eth0": "198.18.0.3", "d/pods/eth0": "198.18.0.4"}
	if got := ipsOf(s.Assignments()); !maps.Equal(got, want) {
		t.Fatalf("after reopen %v, want %v", got, want)
	}
}

func TestCloseReportsAnUnwrittenChange(t *testing.T) {
	f := newFixture(t, "198.18.0.0/29")
	s := f.open()
	if err := os.RemoveAll(filepath.Dir(f.path)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Assign(context.Background(), key("a"), pod("a")); err == nil {
		t.Fatal("Assign succeeded without a directory")
	}
	if err := s.Close(); err == nil {
		t.Fatal("Close succeeded with a change that never reached the disk")
	}
}

func TestOpenCreatesPrivateDirectoryAndRemovesStaleTemps(t *testing.T) {
	f := newFixture(t, "198.18.0.0/29")
	s := f.open()
	mustAssign(t, s, key("a"), pod("a"), "198.18.0.1")
	info, err := os.Stat(filepath.Dir(f.path))
	if err != nil || info.Mode().Perm() != 0o700 {
		t.Fatalf("checkpoint directory mode = %v, %v; want 0700", info.Mode(), err)
	}
	stale := f.path + ".tmp-123"
	if err := os.WriteFile(stale, []byte("half a write"), 0o600); err != nil {
		t.Fatal(err)
	}
	s = f.reopen(s)
	if _, err := os.Stat(stale); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("stale temp file still there: %v", err)
	}
	if s.Recovery().Checkpoint != datastore.RecoveryLoaded {
		t.Fatalf("Recovery = %+v", s.Recovery())
	}
}

func corruptedAside(t *testing.T, f *fixture) string {
	t.Helper()
	return f.path + ".corrupt-" + strconv.FormatInt(f.clock.Now().Unix(), 10)
}

// crashCopy opens what is on disk right now (snapshot and journal), as a
// restart after a crash would, without closing the live store.
func crashCopy(t *testing.T, f *fixture) *datastore.Store {
	t.Helper()
	copyFixture := newFixture(t, f.cidrs...)
	copyFixture.clock = f.clock
	if err := os.MkdirAll(filepath.Dir(copyFixture.path), 0o700); err != nil {
		t.Fatal(err)
	}
	for _, suffix := range []string{"", ".journal"} {
		data, err := os.ReadFile(f.path + suffix)
		if errors.Is(err, os.ErrNotExist) && suffix != "" {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(copyFixture.path+suffix, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return copyFixture.open()
}

func TestEveryAcknowledgedChangeIsOnDiskBeforeReturn(t *testing.T) {
	f := newFixture(t, "198.18.0.0/29")
	s := f.open()
	ctx := context.Background()
	steps := []func(){
		func() { mustAssign(t, s, key("a"), pod("a"), "198.18.0.1") },
		func() { mustAssign(t, s, key("b"), pod("b"), "198.18.0.2") },
		func() { mustRelease(t, s, key("a"), "198.18.0.1") },
		func() {
			if _, err := s.GC(ctx, "pods", nil); err != nil {
				t.Fatal(err)
			}
		},
		func() { mustAssign(t, s, key("c"), pod("c"), "198.18.0.3") },
		func() {
			if _, err := s.ReleaseAssignments(ctx, s.Assignments()); err != nil {
				t.Fatal(err)
			}
		},
	}
	for i, step := range steps {
		step()
		restarted := crashCopy(t, f)
		if got, want := ipsOf(restarted.Assignments()), ipsOf(s.Assignments()); !maps.Equal(got, want) {
			t.Fatalf("after step %d the disk holds %v, memory %v", i, got, want)
		}
		if got, want := restarted.Stats(), s.Stats(); got != want {
			t.Fatalf("after step %d: restarted Stats %+v, live %+v", i, got, want)
		}
	}
}

func TestSecondOpenOfOneCheckpointIsRefused(t *testing.T) {
	f := newFixture(t, "198.18.0.0/29")
	s := f.open()
	_, err := datastore.Open(context.Background(), datastore.Options{Path: f.path})
	if !errors.Is(err, datastore.ErrLocked) {
		t.Fatalf("second Open: err = %v, want ErrLocked", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	again, err := datastore.Open(context.Background(), datastore.Options{Path: f.path})
	if err != nil {
		t.Fatalf("Open after Close: %v", err)
	}
	_ = again.Close()
}

func TestProveWhenMissingStartsUnproven(t *testing.T) {
	f := newFixture(t, "198.18.0.0/30")
	s, err := datastore.Open(context.Background(), datastore.Options{Path: f.path, Now: f.clock.Now, ProveWhenMissing: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	f.fill(s)
	if r := s.Recovery(); r.Checkpoint != datastore.RecoveryMissing || r.Quarantined != 2 || !s.Unproven() {
		t.Fatalf("Recovery = %+v, unproven %v", r, s.Unproven())
	}
	if _, err := s.Assign(context.Background(), key("a"), pod("a")); !errors.Is(err, datastore.ErrUnproven) {
		t.Fatalf("Assign = %v, want ErrUnproven", err)
	}
}
