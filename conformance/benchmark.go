package conformance

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sandboxipam/sandboxipam/runtime"
)

// Benchmark mode measures, as critest -benchmark does, instead of judging:
// how long ListSandboxes and GetSandbox take on a node with Config.Scale
// pods, and how much memory the adapter process holds. It has no pass or
// fail.
const (
	// benchmarkListCalls and benchmarkGetCalls are how many calls each
	// latency figure is taken over.
	benchmarkListCalls = 50
	benchmarkGetCalls  = 200
	// benchmarkWarmup listings run first and are not counted: the first
	// calls pay for connections and the adapter's first runtime check.
	benchmarkWarmup = 3
	// benchmarkCheckID names the benchmark's pods as a check ID names a
	// check's.
	benchmarkCheckID = "benchmark"
)

// Benchmark is what benchmark mode measured.
type Benchmark struct {
	// Pods is how many pods the benchmark created; Listed how many
	// sandboxes the adapter's listing held (the node's other pods too).
	Pods   int `json:"pods"`
	Listed int `json:"listed"`
	// ListSandboxes and GetSandbox are the calls' latencies through the
	// plugin connection, as ipamd sees them.
	ListSandboxes Latency `json:"list_sandboxes"`
	GetSandbox    Latency `json:"get_sandbox"`
	// AdapterRSSBytes and AdapterPeakRSSBytes are the adapter process's
	// resident memory after the calls (VmRSS) and at its peak (VmHWM);
	// zero where /proc cannot tell.
	AdapterRSSBytes     int64 `json:"adapter_rss_bytes"`
	AdapterPeakRSSBytes int64 `json:"adapter_peak_rss_bytes"`
	// Error says why the benchmark stopped short, if it did.
	Error   string  `json:"error,omitempty"`
	Seconds float64 `json:"seconds"`
}

// Latency summarises the durations of one kind of call, in milliseconds.
type Latency struct {
	Calls int     `json:"calls"`
	P50   float64 `json:"p50_ms"`
	P90   float64 `json:"p90_ms"`
	P99   float64 `json:"p99_ms"`
	Max   float64 `json:"max_ms"`
}

// String formats the latency for the text report.
func (l Latency) String() string {
	if l.Calls == 0 {
		return "not measured"
	}
	return fmt.Sprintf("p50 %.2f ms, p90 %.2f ms, p99 %.2f ms, max %.2f ms over %d calls", l.P50, l.P90, l.P99, l.Max, l.Calls)
}

// benchmark creates Scale pods, measures, and removes them.
func (s *Suite) benchmark(ctx context.Context, reporter Reporter) *Benchmark {
	sess := &session{cfg: s.cfg, checkID: benchmarkCheckID, runID: s.runID, adapter: s.adapter, fixture: s.cfg.Fixture,
		res: &resources{}, shared: s.shared}
	start := time.Now()
	b := &Benchmark{}
	if err := sess.measure(ctx, b); err != nil {
		b.Error = err.Error()
	}
	b.AdapterRSSBytes, b.AdapterPeakRSSBytes = processMemory(s.adapter.PID())
	cleanupCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.CleanupTimeout)
	defer cancel()
	if err := sess.res.releaseAll(cleanupCtx); err != nil {
		b.Error = strings.TrimPrefix(b.Error+"; clean-up: "+err.Error(), "; ")
	}
	b.Seconds = time.Since(start).Seconds()
	if r, ok := reporter.(interface{ BenchmarkFinished(*Benchmark) }); ok {
		r.BenchmarkFinished(b)
	}
	return b
}

// measure fills b's pod count and latencies.
func (s *session) measure(ctx context.Context, b *Benchmark) error {
	if s.fixture != nil && s.cfg.Scale > 0 {
		pods, err := s.createPodBatch(ctx, s.cfg.Scale)
		b.Pods = len(pods)
		if err != nil {
			return err
		}
	}
	var list []runtime.Sandbox
	for range benchmarkWarmup {
		var err error
		if list, err = s.list(ctx); err != nil {
			return err
		}
	}
	b.Listed = len(list)
	var err error
	if b.ListSandboxes, err = timeCalls(ctx, benchmarkListCalls, func(ctx context.Context, _ int) error {
		_, err := s.list(ctx)
		return err
	}); err != nil {
		return err
	}
	if len(list) == 0 {
		return nil
	}
	b.GetSandbox, err = timeCalls(ctx, benchmarkGetCalls, func(ctx context.Context, i int) error {
		// A node's other pods may go while the benchmark runs: ErrNotFound
		// is an answer like any other.
		id := list[i%len(list)].ID
		if _, err := s.get(ctx, id); err != nil && !errors.Is(err, runtime.ErrNotFound) {
			return fmt.Errorf("GetSandbox(%s): %w", id, err)
		}
		return nil
	})
	return err
}

// timeCalls makes n calls one after another and summarises their times.
func timeCalls(ctx context.Context, n int, call func(ctx context.Context, i int) error) (Latency, error) {
	took := make([]time.Duration, 0, n)
	for i := range n {
		start := time.Now()
		if err := call(ctx, i); err != nil {
			return summarise(took), err
		}
		took = append(took, time.Since(start))
	}
	return summarise(took), nil
}

// summarise computes nearest-rank percentiles.
func summarise(took []time.Duration) Latency {
	if len(took) == 0 {
		return Latency{}
	}
	sorted := slices.Clone(took)
	slices.Sort(sorted)
	rank := func(p float64) float64 {
		i := int(p*float64(len(sorted))+0.999999) - 1
		return milliseconds(sorted[min(max(i, 0), len(sorted)-1)])
	}
	return Latency{Calls: len(sorted), P50: rank(0.50), P90: rank(0.90), P99: rank(0.99), Max: milliseconds(sorted[len(sorted)-1])}
}

func milliseconds(d time.Duration) float64 {
	return float64(d.Microseconds()) / 1000
}

// processMemory reads VmRSS and VmHWM of pid from /proc, in bytes; zero
// for what it cannot read.
func processMemory(pid int) (rss, peak int64) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0
	}
	defer f.Close()
	scanner := bufio.NewScanner(f)
	for scanner.Scan() {
		key, value, ok := strings.Cut(scanner.Text(), ":")
		if !ok {
			continue
		}
		fields := strings.Fields(value)
		if len(fields) != 2 || fields[1] != "kB" {
			continue
		}
		kb, err := strconv.ParseInt(fields[0], 10, 64)
		if err != nil {
			continue
		}
		switch key {
		case "VmRSS":
			rss = kb * 1024
		case "VmHWM":
			peak = kb * 1024
		}
	}
	return rss, peak
}

// FormatBenchmark is the text report's benchmark section.
func FormatBenchmark(b *Benchmark) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "benchmark (no pass or fail): %d pods created, %d sandboxes listed, %.1fs\n", b.Pods, b.Listed, b.Seconds)
	fmt.Fprintf(&sb, "  ListSandboxes: %s\n", b.ListSandboxes)
	fmt.Fprintf(&sb, "  GetSandbox:    %s\n", b.GetSandbox)
	fmt.Fprintf(&sb, "  adapter RSS:   %.1f MiB (peak %.1f MiB)\n", mib(b.AdapterRSSBytes), mib(b.AdapterPeakRSSBytes))
	if b.Error != "" {
		fmt.Fprintf(&sb, "  stopped short: %s\n", b.Error)
	}
	return sb.String()
}

func mib(bytes int64) float64 { return float64(bytes) / (1 << 20) }
