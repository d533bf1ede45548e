package datastore_test

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// The bbolt side of the comparison the simplification issue asks for: the
// same durable Assign+Release pairs as BenchmarkAssignRelease, on
// go.etcd.io/bbolt with DB.Batch (bbolt's group commit: concurrent
// callers share one transaction and one fdatasync). Measured only; the
// journal stays unless this is clearly faster on the CNI path.
//
// The model is the least a store must do per change: Assign takes the
// first free address and records it under the attachment's key, Release
// deletes the record and frees the address. No cooldown, no pod metadata
// beyond the name, no checksum of its own: everything it skips would only
// make bbolt slower.
var (
	bucketFree     = []byte("free")
	bucketAssigned = []byte("assigned")
)

// openBolt creates a bbolt file with the same /16 pool as openBench.
func openBolt(b *testing.B) *bolt.DB {
	b.Helper()
	db, err := bolt.Open(filepath.Join(b.TempDir(), "ipam.db"), 0o600, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = db.Close() })
	err = db.Update(func(tx *bolt.Tx) error {
		free, err := tx.CreateBucket(bucketFree)
		if err != nil {
			return err
		}
		if _, err := tx.CreateBucket(bucketAssigned); err != nil {
			return err
		}
		pool := netip.MustParsePrefix("198.18.0.0/16")
		for a := pool.Addr().Next(); pool.Contains(a.Next()); a = a.Next() {
			if err := free.Put(a.AsSlice(), nil); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	return db
}

var errPoolEmpty = errors.New("pool exhausted")

func boltAssign(db *bolt.DB, key, pod []byte) error {
	return db.Batch(func(tx *bolt.Tx) error {
		assigned := tx.Bucket(bucketAssigned)
		if assigned.Get(key) != nil {
			return nil // idempotent ADD
		}
		c := tx.Bucket(bucketFree).Cursor()
		addr, _ := c.First()
		if addr == nil {
			return errPoolEmpty
		}
		value := append(append([]byte(nil), addr...), pod...)
		if err := c.Delete(); err != nil {
			return err
		}
		return assigned.Put(key, value)
	})
}

func boltRelease(db *bolt.DB, key []byte) error {
	return db.Batch(func(tx *bolt.Tx) error {
		assigned := tx.Bucket(bucketAssigned)
		value := assigned.Get(key)
		if value == nil {
			return nil // DEL of an unknown key succeeds
		}
		addr := append([]byte(nil), value[:4]...)
		if err := assigned.Delete(key); err != nil {
			return err
		}
		return tx.Bucket(bucketFree).Put(addr, nil)
	})
}

// BenchmarkBoltAssignRelease is BenchmarkAssignRelease on bbolt: one
// durable Assign and one durable Release per op, 1, 8 and 64 callers.
// DB.Batch waits up to MaxBatchDelay (10ms by default) for more callers
// before it commits; the delay=0 runs commit at once.
func BenchmarkBoltAssignRelease(b *testing.B) {
	for _, delay := range []time.Duration{10 * time.Millisecond, 0} { // bbolt's default, and none
		for _, callers := range []int{1, 8, 64} {
			b.Run(fmt.Sprintf("delay=%s/callers=%d", delay, callers), func(b *testing.B) {
				benchBolt(b, delay, callers)
			})
		}
	}
}

func benchBolt(b *testing.B, delay time.Duration, callers int) {
	db := openBolt(b)
	db.MaxBatchDelay = delay
	var next atomic.Int64
	b.SetParallelism((callers + 1) / 2) // as BenchmarkAssignRelease
	if callers == 1 {
		b.SetParallelism(1)
	}
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			n := next.Add(1)
			key := binary.BigEndian.AppendUint64([]byte("pods/sb-"), uint64(n))
			key = append(key, "/eth0"...)
			if err := boltAssign(db, key, []byte(fmt.Sprintf("sb-%d", n))); err != nil {
				b.Error(err)
				return
			}
			if err := boltRelease(db, key); err != nil {
				b.Error(err)
				return
			}
		}
	})
}
