package host

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/sandboxipam/sandboxipam/internal/testadapter"
	"github.com/sandboxipam/sandboxipam/runtime"
	"github.com/sandboxipam/sandboxipam/runtime/plugin/internal/shared"
	adapterpb "github.com/sandboxipam/sandboxipam/runtime/plugin/proto"
)

// BenchmarkLaunchToFirstAnswer: from Launch to the first Info answer, the
// process's start, the handshake, go-plugin's AutoMTLS (automtls=on: both
// sides generate a key) and the first connection included. Close is not
// timed. median-ms is the median iteration.
func BenchmarkLaunchToFirstAnswer(b *testing.B) {
	for _, mtls := range []bool{true, false} {
		b.Run(map[bool]string{true: "automtls=on", false: "automtls=off"}[mtls], func(b *testing.B) {
			cfg := pluginConfig(b, writeState(b, fixtureState()))
			cfg.DisableAutoMTLS = !mtls
			ctx := context.Background()
			durations := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for range b.N {
				start := time.Now()
				client, err := Launch(ctx, cfg)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := client.Info(ctx); err != nil {
					b.Fatal(err)
				}
				durations = append(durations, time.Since(start))
				b.StopTimer()
				_ = client.Close()
				b.StartTimer()
			}
			reportMedian(b, durations)
		})
	}
}

// BenchmarkListSandboxes: one ListSandboxes round trip through the plugin
// (AutoMTLS on) against the same adapter called in process. The adapter
// decodes its JSON state file on every call in both cases.
func BenchmarkListSandboxes(b *testing.B) {
	for _, n := range []int{1, 100, 10_000} {
		statePath := writeState(b, testadapter.State{RuntimeName: "containerd", RuntimeVersion: "1.6.20", Sandboxes: manySandboxes(n)})
		b.Run(fmt.Sprintf("n=%d/plugin", n), func(b *testing.B) {
			client := launch(b, pluginConfig(b, statePath))
			benchmarkList(b, client, client.PID(), n)
		})
		b.Run(fmt.Sprintf("n=%d/inprocess", n), func(b *testing.B) {
			benchmarkList(b, testadapter.New(statePath), 0, n)
		})
	}
}

// benchmarkList also reports cpu-ms: the CPU time per call of the host
// and, for a plugin, of the plugin process too. On a shared machine it is
// steadier than the wall time.
func benchmarkList(b *testing.B, adapter runtime.RuntimeAdapter, pluginPID int, n int) {
	ctx := context.Background()
	durations := make([]time.Duration, 0, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	cpuStart := cpuTime(b, pluginPID)
	for range b.N {
		start := time.Now()
		sandboxes, err := adapter.ListSandboxes(ctx)
		if err != nil {
			b.Fatal(err)
		}
		durations = append(durations, time.Since(start))
		if len(sandboxes) != n {
			b.Fatalf("listed %d sandboxes, want %d", len(sandboxes), n)
		}
	}
	b.ReportMetric(float64(cpuTime(b, pluginPID)-cpuStart)/float64(time.Millisecond)/float64(b.N), "cpu-ms")
	reportMedian(b, durations)
}

// cpuTime is the CPU time used so far by this process and, unless pid is
// 0, by process pid.
func cpuTime(b *testing.B, pid int) time.Duration {
	var usage syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &usage); err != nil {
		b.Fatal(err)
	}
	total := time.Duration(usage.Utime.Nano() + usage.Stime.Nano())
	if pid == 0 {
		return total
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Fatal(err)
	}
	// utime and stime are fields 14 and 15, in clock ticks (USER_HZ, 100
	// on Linux), counted after the command name's closing parenthesis.
	fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	utime, _ := strconv.Atoi(fields[11])
	stime, _ := strconv.Atoi(fields[12])
	return total + time.Duration(utime+stime)*10*time.Millisecond
}

// BenchmarkWireCodec is the boundary's own cost for a listing, without a
// process, a socket or an adapter: convert, marshal, unmarshal, convert
// back.
func BenchmarkWireCodec(b *testing.B) {
	for _, n := range []int{100, 10_000} {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			sandboxes := manySandboxes(n)
			b.ReportAllocs()
			cpuStart := cpuTime(b, 0)
			for b.Loop() {
				data, err := proto.Marshal(&adapterpb.ListSandboxesResponse{Sandboxes: shared.ToProtoSandboxes(sandboxes)})
				if err != nil {
					b.Fatal(err)
				}
				var resp adapterpb.ListSandboxesResponse
				if err := proto.Unmarshal(data, &resp); err != nil {
					b.Fatal(err)
				}
				if _, err := shared.FromProtoSandboxes(resp.GetSandboxes()); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(cpuTime(b, 0)-cpuStart)/float64(time.Millisecond)/float64(b.N), "cpu-ms")
		})
	}
}

func reportMedian(b *testing.B, durations []time.Duration) {
	if len(durations) == 0 {
		return
	}
	slices.Sort(durations)
	b.ReportMetric(float64(durations[len(durations)/2])/float64(time.Millisecond), "median-ms")
}

// manySandboxes returns n sandboxes shaped like kubelet's: a 64-hex ID, pod
// identity, one IP and kubelet's labels.
func manySandboxes(n int) []runtime.Sandbox {
	out := make([]runtime.Sandbox, n)
	created := time.Date(2026, 12, 2, 8, 0, 0, 0, time.UTC)
	for i := range out {
		name := fmt.Sprintf("pod-%05d", i)
		uid := fmt.Sprintf("%08x-0000-4000-8000-%012x", i, i)
		out[i] = runtime.Sandbox{
			ID:        fmt.Sprintf("%064x", 0xabc000000+i),
			Name:      name,
			Namespace: "bench",
			UID:       uid,
			State:     runtime.StateReady,
			CreatedAt: created.Add(time.Duration(i) * time.Second),
			NetNS:     fmt.Sprintf("/var/run/netns/cni-%08x", i),
			IPs:       []netip.Addr{netip.AddrFrom4([4]byte{198, 18, byte(i >> 8), byte(i)})},
			Labels: map[string]string{
				"app":                         "bench",
				"io.kubernetes.pod.name":      name,
				"io.kubernetes.pod.namespace": "bench",
				"io.kubernetes.pod.uid":       uid,
				"pod-template-hash":           "5d4f8c7b9",
			},
		}
	}
	return out
}

// BenchmarkPing: one unary call through the plugin connection, the
// adapter untouched.
func BenchmarkPing(b *testing.B) {
	for _, mtls := range []bool{true, false} {
		b.Run(map[bool]string{true: "automtls=on", false: "automtls=off"}[mtls], func(b *testing.B) {
			cfg := pluginConfig(b, writeState(b, fixtureState()))
			cfg.DisableAutoMTLS = !mtls
			client := launch(b, cfg)
			ctx := context.Background()
			durations := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for range b.N {
				start := time.Now()
				if err := client.Ping(ctx); err != nil {
					b.Fatal(err)
				}
				durations = append(durations, time.Since(start))
			}
			reportMedian(b, durations)
		})
	}
}
