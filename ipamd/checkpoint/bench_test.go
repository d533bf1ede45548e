package checkpoint_test

import (
	"fmt"
	"net/netip"
	"path/filepath"
	"testing"
	"time"

	"github.com/sandboxipam/sandboxipam/ipamd/checkpoint"
)

// stateOf builds a realistic file: n assignments with 64-hex sandbox IDs
// and pod metadata, plus n/10 cooling addresses.
func stateOf(n int) checkpoint.File {
	at := time.Date(2026, 12, 2, 12, 0, 0, 123456789, time.UTC)
	subnet := netip.MustParsePrefix("198.18.0.0/16")
	f := checkpoint.File{SavedAt: at}
	ip := subnet.Addr().Next()
	for i := range n + n/10 {
		a := checkpoint.Address{IP: ip, Subnet: subnet, Group: "static"}
		if i >= n {
			a.ReleasedAt = at
		} else {
			f.Assignments = append(f.Assignments, checkpoint.Assignment{
				Network: "pods", SandboxID: fmt.Sprintf("%064x", i), IfName: "eth0",
				PodName: fmt.Sprintf("web-%d", i), Namespace: "default", UID: fmt.Sprintf("8f3c2a1e-0278-11ea-9fc6-%012x", i),
				IPs: []netip.Addr{ip}, AssignedAt: at,
			})
		}
		f.Addresses = append(f.Addresses, a)
		ip = ip.Next()
	}
	return f
}

// BenchmarkCheckpointWrite encodes and durably writes (temp, fsync,
// rename, fsync dir) a checkpoint of n assignments; bytes/op is its size.
func BenchmarkCheckpointWrite(b *testing.B) {
	for _, n := range []int{250, 10000} {
		b.Run(fmt.Sprintf("assignments=%d", n), func(b *testing.B) {
			f := stateOf(n)
			path := filepath.Join(b.TempDir(), "cp")
			data, err := checkpoint.Encode(f)
			if err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for range b.N {
				data, err := checkpoint.Encode(f)
				if err != nil {
					b.Fatal(err)
				}
				if err := checkpoint.WriteAtomic(path, data); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(len(data)), "file-bytes")
		})
	}
}

// BenchmarkWriteAtomic4KiB is the floor: 4 KiB through temp file, fsync,
// rename and directory fsync, to compare the other figures with in one run.
func BenchmarkWriteAtomic4KiB(b *testing.B) {
	path := filepath.Join(b.TempDir(), "cp")
	data := make([]byte, 4096)
	for range b.N {
		if err := checkpoint.WriteAtomic(path, data); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCheckpointEncode is the CPU part of a write.
func BenchmarkCheckpointEncode(b *testing.B) {
	for _, n := range []int{250, 10000} {
		b.Run(fmt.Sprintf("assignments=%d", n), func(b *testing.B) {
			f := stateOf(n)
			for range b.N {
				if _, err := checkpoint.Encode(f); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkCheckpointDecode is the load at start.
func BenchmarkCheckpointDecode(b *testing.B) {
	for _, n := range []int{250, 10000} {
		b.Run(fmt.Sprintf("assignments=%d", n), func(b *testing.B) {
			data, err := checkpoint.Encode(stateOf(n))
			if err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for range b.N {
				if _, err := checkpoint.Decode(data); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
