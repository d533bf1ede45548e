package server_test

import (
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	ipamdv1 "github.com/sandboxipam/sandboxipam/ipamd/api/v1"
	"github.com/sandboxipam/sandboxipam/ipamd/api/wire"
	"github.com/sandboxipam/sandboxipam/ipamd/api/wire/wireproto"
)

// BenchmarkAddDelWire measures durable Add+Del pairs through the unix
// socket with the wire framing the CNI plugin speaks, checkpointing on,
// from 1, 8 and 64 concurrent clients, each on its own connection.
// Reported: pairs/s, and the p50/p99 latency of one Add.
func BenchmarkAddDelWire(b *testing.B) {
	for _, clients := range []int{1, 8, 64} {
		b.Run(fmt.Sprintf("clients=%d", clients), func(b *testing.B) {
			h := newHarness(b, "198.18.0.0/24")
			conns := make([]*wire.Client, clients)
			for i := range conns {
				conns[i] = h.wireClient()
			}
			benchPairs(b, clients, func(client, n int) (time.Duration, error) {
				c := conns[client]
				start := time.Now()
				if err := wireproto.Call(b.Context(), c, wire.MethodAdd, benchReq(client, n), &ipamdv1.AddResponse{}); err != nil {
					return 0, err
				}
				took := time.Since(start)
				return took, wireproto.Call(b.Context(), c, wire.MethodDel, &ipamdv1.DelRequest{Attachment: benchAttachment(client, n)}, &ipamdv1.DelResponse{})
			})
		})
	}
}

func benchAttachment(client, n int) *ipamdv1.Attachment {
	return &ipamdv1.Attachment{Network: "testnet", SandboxId: fmt.Sprintf("bench-%03d-%09d", client, n), Ifname: "eth0"}
}

func benchReq(client, n int) *ipamdv1.AddRequest {
	return &ipamdv1.AddRequest{Attachment: benchAttachment(client, n), Netns: "/var/run/netns/bench",
		Pod: &ipamdv1.PodRef{Name: "bench", Namespace: "default", Uid: "uid"}}
}

// benchPairs runs b.N pairs spread over clients goroutines and reports
// pairs/s and Add latency percentiles.
func benchPairs(b *testing.B, clients int, pair func(client, n int) (time.Duration, error)) {
	var next atomic.Int64
	lat := make([][]time.Duration, clients)
	var wg sync.WaitGroup
	var failed atomic.Value
	b.ResetTimer()
	start := time.Now()
	for c := range clients {
		wg.Go(func() {
			for {
				n := int(next.Add(1))
				if n > b.N {
					return
				}
				took, err := pair(c, n)
				if err != nil {
					failed.Store(err)
					return
				}
				lat[c] = append(lat[c], took)
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	if err, ok := failed.Load().(error); ok {
		b.Fatalf("pair failed: %v", err)
	}
	all := slices.Concat(lat...)
	slices.Sort(all)
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "pairs/s")
	b.ReportMetric(float64(percentile(all, 50).Microseconds())/1000, "p50-add-ms")
	b.ReportMetric(float64(percentile(all, 99).Microseconds())/1000, "p99-add-ms")
}

func percentile(sorted []time.Duration, p int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[(len(sorted)-1)*p/100]
}
