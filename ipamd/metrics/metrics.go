// Package metrics is ipamd's Prometheus instrumentation, on a registry of
// its own (never the process-wide default), so several daemons can run in
// one test process and nothing registers behind the daemon's back.
//
// Pool gauges and adapter health are read at scrape time from their
// owners, so a gauge can never drift from the datastore it describes.
package metrics

import (
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/sandboxipam/sandboxipam/ipamd/datastore"
	"github.com/sandboxipam/sandboxipam/ipamd/reconcile"
	"google.golang.org/grpc/status"
)

const namespace = "ipamd"

// Sources are read at every scrape.
type Sources struct {
	// Stats is the datastore's pool counts.
	Stats func() datastore.Stats
	// Adapter reports whether the runtime adapter is healthy and how often
	// it was relaunched; nil when ipamd runs without one.
	Adapter func() (healthy bool, restarts int)
	// Unproven reports whether the datastore hands out nothing until the
	// runtime and the node account for every pod's address.
	Unproven func() bool
}

// Metrics holds ipamd's collectors and their registry.
type Metrics struct {
	registry          *prometheus.Registry
	callDuration      *prometheus.HistogramVec
	reconcileRuns     *prometheus.CounterVec
	reconcileErrors   prometheus.Counter
	reconcileReleased prometheus.Counter
	blindSandboxes    prometheus.Gauge
	conflicts         prometheus.Counter
}

// New builds the collectors and registers them, with the Go runtime and
// process collectors, on a new registry.
func New(src Sources) *Metrics {
	m := &Metrics{
		registry: prometheus.NewRegistry(),
		callDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: namespace, Name: "cni_request_duration_seconds",
			Help: "Time to answer one CNI-facing API call (Add, Del, Check, GC, Status), by method and gRPC status code.",
			// 50µs to 2.5s: a durable Add is about a millisecond.
			Buckets: prometheus.ExponentialBuckets(50e-6, 2.5, 13),
		}, []string{"method", "code"}),
		reconcileRuns: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "reconcile_runs_total",
			Help: "Reconcile passes, by whether they were dry runs.",
		}, []string{"dry_run"}),
		reconcileErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: namespace, Name: "reconcile_errors_total",
			Help: "Reconcile passes that released nothing because the sandbox listing failed.",
		}),
		reconcileReleased: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: namespace, Name: "reconcile_released_ips_total",
			Help: "Addresses the reconciler released because their sandbox was gone from the runtime.",
		}),
		blindSandboxes: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: namespace, Name: "adapter_missing_sandboxes",
			Help: "Sandboxes CNI added that the runtime adapter did not list in the last pass although the grace period had passed; above zero the adapter is blind or looks at another runtime, and nothing is released.",
		}),
		conflicts: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: namespace, Name: "quarantine_conflicts_total",
			Help: "Addresses quarantined because a pod held them while the datastore recorded them free or under another sandbox.",
		}),
	}
	m.registry.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		m.callDuration, m.reconcileRuns, m.reconcileErrors, m.reconcileReleased, m.blindSandboxes, m.conflicts,
	)
	if src.Unproven != nil {
		m.registry.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Namespace: namespace, Name: "datastore_unproven",
			Help: "1 while ipamd has no trusted checkpoint and the runtime and the node have not accounted for every pod's address: no address is handed out.",
		}, func() float64 {
			if src.Unproven() {
				return 1
			}
			return 0
		}))
	}
	m.registerPool(src.Stats)
	if src.Adapter != nil {
		m.registerAdapter(src.Adapter)
	}
	return m
}

func (m *Metrics) registerPool(stats func() datastore.Stats) {
	if stats == nil {
		return
	}
	for state, read := range map[string]func(datastore.Stats) int{
		"total":    func(s datastore.Stats) int { return s.Total },
		"assigned": func(s datastore.Stats) int { return s.Assigned },
		"free":     func(s datastore.Stats) int { return s.Free },
		"cooling":  func(s datastore.Stats) int { return s.Cooling },
		"unproven": func(s datastore.Stats) int { return s.Unproven },
	} {
		m.registry.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Namespace: namespace, Name: "ips", ConstLabels: prometheus.Labels{"state": state},
			Help: "Pool addresses by state: total, assigned, free, cooling (released, waiting out the cooldown), unproven (quarantined after a lost checkpoint).",
		}, func() float64 { return float64(read(stats())) }))
	}
}

func (m *Metrics) registerAdapter(adapter func() (bool, int)) {
	m.registry.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Namespace: namespace, Name: "adapter_healthy",
			Help: "1 when the runtime adapter plugin is running and answering, else 0.",
		}, func() float64 {
			if healthy, _ := adapter(); healthy {
				return 1
			}
			return 0
		}),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Namespace: namespace, Name: "adapter_restarts_total",
			Help: "Times the runtime adapter plugin was relaunched after it died.",
		}, func() float64 { _, restarts := adapter(); return float64(restarts) }),
	)
}

// ObserveCall records one CNI-facing call; it fits server.Observer.
func (m *Metrics) ObserveCall(method string, took time.Duration, err error) {
	m.callDuration.WithLabelValues(method, status.Code(err).String()).Observe(took.Seconds())
}

// ObserveReconcile records one reconcile pass; it fits
// reconcile.Config.OnResult.
func (m *Metrics) ObserveReconcile(r reconcile.Result) {
	dry := "false"
	if r.DryRun {
		dry = "true"
	}
	m.reconcileRuns.WithLabelValues(dry).Inc()
	if r.Err != "" {
		m.reconcileErrors.Inc()
	}
	if !r.DryRun {
		m.reconcileReleased.Add(float64(len(r.Released)))
		m.conflicts.Add(float64(r.Conflicts))
	}
	if r.Err == "" || r.Blind() {
		m.blindSandboxes.Set(float64(len(r.Missing)))
	}
}

// Registry is the registry the collectors live on.
func (m *Metrics) Registry() *prometheus.Registry { return m.registry }

// Handler serves the registry in the Prometheus exposition format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.registry, promhttp.HandlerOpts{Registry: m.registry})
}
