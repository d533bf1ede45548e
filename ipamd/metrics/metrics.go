// Package metrics is ipamd's Prometheus instrumentation, on a registry of
// its own (never the process-wide default), so several daemons can run in
// one test process and nothing registers behind the daemon's back.
//
// Pool gauges and adapter health are read at scrape time from their
// owners, so a gauge can never drift from the datastore it describes: the
// pool's from one Store.View per scrape (pool.go).
//
// See docs/architecture.md for where this package sits.
package metrics

import (
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/sandboxipam/sandboxipam/ipamd/api/apierr"
	"github.com/sandboxipam/sandboxipam/ipamd/datastore"
	"github.com/sandboxipam/sandboxipam/ipamd/reconcile"
)

const namespace = "ipamd"

// Sources are read at every scrape.
type Sources struct {
	// Pool is the datastore's read model (Store.View), taken once per
	// scrape for ipamd_datastore_unproven, ipamd_addresses and
	// the range gauges; nil leaves them out.
	Pool func() datastore.PoolView
	// AdapterRestarts reports how often the runtime adapter was
	// relaunched; nil when ipamd runs without one.
	AdapterRestarts func() int
	// AdapterState is the adapter's supervision state: one of
	// AdapterStates; nil when ipamd runs without one.
	AdapterState func() string
	// Now is the clock for ages; nil means time.Now.
	Now func() time.Time
	// ReconcileGrace, when set, is exported as ipamd_reconcile_grace_seconds,
	// so alerts can count in grace periods whatever the config says.
	ReconcileGrace time.Duration
}

// AdapterStates are the values of ipamd_adapter_state's state label: the
// supervisor's states, and "none" while no adapter is selected or none can be.
var AdapterStates = []string{"none", "starting", "healthy", "unhealthy", "stopped"}

// ReleaseReasons are the values of ipamd_released_addresses_total's
// reason label, exported at zero from the start so rules see them.
var ReleaseReasons = []string{datastore.ReasonCNIDel, datastore.ReasonCNIGC, datastore.ReasonRuntimeGone, datastore.ReasonOperator}

// Metrics holds ipamd's collectors and their registry.
type Metrics struct {
	registry        *prometheus.Registry
	callDuration    *prometheus.HistogramVec
	reconcileRuns   *prometheus.CounterVec
	reconcileErrors prometheus.Counter
	blindSandboxes  prometheus.Gauge
	conflicts       prometheus.Counter
	released        *prometheus.CounterVec
	assigned        *prometheus.CounterVec
	unlistedGauge   prometheus.Gauge
	forcedReleases  prometheus.Counter
	wiringRefused   prometheus.Counter
	loopbackRefused prometheus.Counter
	now             func() time.Time

	// unlistedSince maps each assignment the last pass kept although its
	// sandbox was not listed to the first pass that did not list it.
	mu            sync.Mutex
	unlistedSince map[datastore.Key]time.Time
}

// New builds the collectors and registers them, with the Go runtime and
// process collectors, on a new registry.
func New(src Sources) *Metrics {
	m := &Metrics{
		registry: prometheus.NewRegistry(),
		callDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: namespace, Name: "cni_request_duration_seconds",
			Help: "Time to answer one CNI-facing API call (Add, Del, Check, GC, Status), by method and the wire code ipamd answered (OK, ResourceExhausted, Unavailable, ...).",
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
		blindSandboxes: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: namespace, Name: "adapter_missing_sandboxes",
			Help: "Sandboxes CNI added that the runtime adapter did not list in the last pass although the grace period had passed; above zero the adapter is blind or looks at another runtime, and nothing is released.",
		}),
		conflicts: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: namespace, Name: "quarantine_conflicts_total",
			Help: "Addresses quarantined because a pod held them while the datastore recorded them free or under another sandbox.",
		}),
		released: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "released_addresses_total",
			Help: "Addresses released, by reason: cni_del (the runtime's DEL), cni_gc (the CNI GC verb), runtime_gone (the reconciler found the sandbox gone), operator (ipamctl release).",
		}, []string{"reason"}),
		assigned: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "assigned_addresses_total",
			Help: "Addresses assigned, by how: cni_add (a CNI ADD), adopted (rebuilt from the runtime listing after a lost checkpoint).",
		}, []string{"how"}),
		unlistedGauge: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: namespace, Name: "unlisted_assignments",
			Help: "Assignments whose sandbox the last successful runtime listing did not show and that the pass kept (inside the grace, never listed yet, or kept by a pod link on the node).",
		}),
		forcedReleases: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: namespace, Name: "operator_forced_releases_total",
			Help: "Releases an operator forced (ipamctl release --force), overriding whatever the runtime or the node showed of the attachment being in use; each is logged at WARN with the caller's uid.",
		}),
		wiringRefused: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: namespace, Name: "ipam_only_adds_refused_total",
			Help: "ADDs refused because the CNI plugin ran as IPAM only under another main plugin while podLinks.podWiring says the plugin wires every pod (plugin, or auto with cni.confListPath set): the setting is wrong for this node.",
		}),
		loopbackRefused: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: namespace, Name: "loopback_changes_refused_total",
			Help: "Calls that change state (release, reconcile) refused on the loopback introspection listener, which serves reads only: every one, while the log shows at most 5 a minute. A rise is a local process or hostNetwork pod calling it, or ipamctl run without access to the admin socket.",
		}),
		now:           src.Now,
		unlistedSince: map[datastore.Key]time.Time{},
	}
	if m.now == nil {
		m.now = time.Now
	}
	m.register(src)
	return m
}

// register registers New's metrics, and those whose sources src has.
func (m *Metrics) register(src Sources) {
	for _, r := range ReleaseReasons {
		m.released.WithLabelValues(r)
	}
	m.assigned.WithLabelValues("cni_add")
	m.assigned.WithLabelValues("adopted")
	m.registry.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		m.callDuration, m.reconcileRuns, m.reconcileErrors, m.blindSandboxes, m.conflicts, m.wiringRefused, m.loopbackRefused,
		m.released, m.assigned, m.unlistedGauge, m.forcedReleases,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Namespace: namespace, Name: "oldest_unlisted_assignment_seconds",
			Help: "How long the oldest of ipamd_unlisted_assignments has been missing from the runtime's listings (since the first successful pass that did not show it); 0 when there is none. Several grace periods mean a leak.",
		}, m.oldestUnlisted),
	)
	if src.Pool != nil {
		m.registry.MustRegister(poolCollector{pool: src.Pool})
	}
	if src.AdapterRestarts != nil {
		m.registry.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{
			Namespace: namespace, Name: "adapter_restarts_total",
			Help: "Times the runtime adapter plugin was relaunched after it died.",
		}, func() float64 { return float64(src.AdapterRestarts()) }))
	}
	if src.AdapterState != nil {
		m.registerAdapterState(src.AdapterState)
	}
	if src.ReconcileGrace > 0 {
		grace := prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: namespace, Name: "reconcile_grace_seconds",
			Help: "The reconcile grace period (reconcile.grace): an assignment younger than this is never released.",
		})
		grace.Set(src.ReconcileGrace.Seconds())
		m.registry.MustRegister(grace)
	}
}

// MustRegister adds collectors of other parts (the node routes) to
// ipamd's registry.
func (m *Metrics) MustRegister(cs ...prometheus.Collector) { m.registry.MustRegister(cs...) }

func (m *Metrics) registerAdapterState(state func() string) {
	for _, st := range AdapterStates {
		m.registry.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Namespace: namespace, Name: "adapter_state", ConstLabels: prometheus.Labels{"state": st},
			Help: "1 for the runtime adapter's current supervision state (none, starting, healthy, unhealthy, stopped), 0 for the others.",
		}, func() float64 {
			if state() == st {
				return 1
			}
			return 0
		}))
	}
}

// ObserveEvents counts the datastore's assignments and releases; it fits
// datastore.Options.OnEvent.
func (m *Metrics) ObserveEvents(events []datastore.Event) {
	for _, e := range events {
		switch e.Kind {
		case datastore.EventAssigned:
			m.assigned.WithLabelValues("cni_add").Inc()
		case datastore.EventAdopted:
			m.assigned.WithLabelValues("adopted").Inc()
		case datastore.EventReleased:
			m.released.WithLabelValues(e.Reason).Inc()
		}
	}
}

// observeUnlisted keeps, for each assignment a successful pass kept
// unlisted, when it was first found so.
func (m *Metrics) observeUnlisted(r reconcile.Result) {
	m.mu.Lock()
	defer m.mu.Unlock()
	next := make(map[datastore.Key]time.Time, len(r.Unlisted))
	for _, a := range r.Unlisted {
		since, ok := m.unlistedSince[a.Key]
		if !ok {
			since = r.At
		}
		next[a.Key] = since
	}
	m.unlistedSince = next
	m.unlistedGauge.Set(float64(len(next)))
}

func (m *Metrics) oldestUnlisted() float64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	var oldest time.Time
	for _, since := range m.unlistedSince {
		if oldest.IsZero() || since.Before(oldest) {
			oldest = since
		}
	}
	if oldest.IsZero() {
		return 0
	}
	return max(m.now().Sub(oldest).Seconds(), 0)
}

// ObserveWiringRefused counts an ADD refused because the plugin ran as
// IPAM only on a node configured as "the plugin wires every pod".
func (m *Metrics) ObserveWiringRefused() { m.wiringRefused.Inc() }

// ObserveLoopbackRefused counts a call that changes state refused on the
// loopback introspection listener.
func (m *Metrics) ObserveLoopbackRefused() { m.loopbackRefused.Inc() }

// ObserveCall records one CNI-facing call; it fits server.Observer.
func (m *Metrics) ObserveCall(method string, took time.Duration, err error) {
	m.callDuration.WithLabelValues(method, apierr.Code(err).String()).Observe(took.Seconds())
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
		m.conflicts.Add(float64(r.Conflicts))
	}
	if r.Err == "" || r.Blind() {
		m.blindSandboxes.Set(float64(len(r.Missing)))
	}
	if !r.DryRun && (r.Err == "" || r.Blind()) {
		m.observeUnlisted(r)
	}
}

// ObserveForcedRelease counts one release an operator forced.
func (m *Metrics) ObserveForcedRelease() { m.forcedReleases.Inc() }

// Registry is the registry the collectors live on.
func (m *Metrics) Registry() *prometheus.Registry { return m.registry }

// Handler serves the registry in the Prometheus exposition format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.registry, promhttp.HandlerOpts{Registry: m.registry})
}
