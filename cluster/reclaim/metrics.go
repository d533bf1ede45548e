package reclaim

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/sandboxipam/sandboxipam/cluster/clustercheck"
)

// Metrics are the reclaimer's Prometheus metrics, in a registry of their
// own (no global state).
type Metrics struct {
	registry   *prometheus.Registry
	duplicates prometheus.Gauge
	findings   *prometheus.GaugeVec
	compared   *prometheus.GaugeVec
	lastCheck  prometheus.Gauge
	leader     prometheus.Gauge
	reclaimed  prometheus.Counter
	returned   prometheus.Counter
	waiting    prometheus.Gauge
	lastPass   prometheus.Gauge
	errors     *prometheus.CounterVec
}

// NewMetrics makes the metrics in a registry of their own; a Reclaimer
// makes its own (Reclaimer.Metrics).
func NewMetrics() *Metrics {
	m := &Metrics{
		registry: prometheus.NewRegistry(),
		duplicates: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: "sandboxipam", Subsystem: "cluster", Name: "duplicate_addresses",
			Help: "Addresses that two or more pods hold anywhere in the cluster, at the last cluster check (status.podIPs of pods that have neither Succeeded nor Failed, hostNetwork pods left out)."}),
		findings: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: "sandboxipam", Subsystem: "cluster", Name: "findings",
			Help: "Findings of the last cluster check, by kind (as ipamctl check --cluster names them)."}, []string{"kind"}),
		compared: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: "sandboxipam", Subsystem: "cluster", Name: "objects",
			Help: "Objects the last cluster check compared, by kind (pools, blocks, nodes, pods, addresses)."}, []string{"kind"}),
		lastCheck: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: "sandboxipam", Subsystem: "cluster", Name: "check_last_run_timestamp_seconds",
			Help: "When the last cluster check ran (Unix seconds); only the leading reclaimer runs it."}),
		leader: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: "sandboxipam", Subsystem: "reclaimer", Name: "leader",
			Help: "1 while this reclaimer holds the leader Lease and acts, 0 otherwise."}),
		reclaimed: prometheus.NewCounter(prometheus.CounterOpts{Namespace: "sandboxipam", Subsystem: "reclaimer", Name: "blocks_reclaimed_total",
			Help: "IPBlocks of dead nodes this reclaimer deleted, each on evidence (an Event on the block and a log line name it)."}),
		returned: prometheus.NewCounter(prometheus.CounterOpts{Namespace: "sandboxipam", Subsystem: "reclaimer", Name: "reclaimed_nodes_answering_total",
			Help: "Nodes whose blocks this reclaimer reclaimed as dead and whose ipamd answered again, as the same node, afterwards: their old pods may hold addresses now handed out elsewhere until their kubelet kills them (a Warning Event ReclaimedNodeAnswers on each such block, and a log line)."}),
		waiting: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: "sandboxipam", Subsystem: "reclaimer", Name: "blocks_awaiting_evidence",
			Help: "IPBlocks whose Node is gone or registered again but that are kept: the node's Lease is within the grace, or pods still hold addresses in them."}),
		lastPass: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: "sandboxipam", Subsystem: "reclaimer", Name: "last_pass_timestamp_seconds",
			Help: "When the last reclaim pass ran (Unix seconds)."}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "sandboxipam", Subsystem: "reclaimer", Name: "errors_total",
			Help: "Failures of the reclaimer, by operation (pass, delete, event)."}, []string{"op"}),
	}
	m.registry.MustRegister(m.duplicates, m.findings, m.compared, m.lastCheck, m.leader, m.reclaimed, m.returned, m.waiting, m.lastPass, m.errors)
	// Every series exists from the start, at 0: a rule on a missing
	// series would stay silent.
	for _, op := range []string{"pass", "delete", "event"} {
		m.errors.WithLabelValues(op)
	}
	// The reclaimer's check reads the API alone (it has no pods/exec into
	// ipamd), so the kinds only what the nodes hold can show are not
	// exported: a series that is always 0 would claim a check never run.
	for _, k := range clustercheck.APIKinds() {
		m.findings.WithLabelValues(string(k))
	}
	return m
}

// Registry is what /metrics serves.
func (m *Metrics) Registry() *prometheus.Registry { return m.registry }

func (m *Metrics) observeCheck(r clustercheck.Report, at float64) {
	m.duplicates.Set(float64(r.Count(clustercheck.DuplicateAddress)))
	for _, k := range clustercheck.APIKinds() {
		m.findings.WithLabelValues(string(k)).Set(float64(r.Count(k)))
	}
	for kind, n := range map[string]int{"pools": r.Pools, "blocks": r.Blocks, "nodes": r.Nodes, "pods": r.Pods, "addresses": r.Addresses} {
		m.compared.WithLabelValues(kind).Set(float64(n))
	}
	m.lastCheck.Set(at)
}

func (m *Metrics) observePass(p Pass, waiting int) {
	m.waiting.Set(float64(waiting))
	m.lastPass.Set(float64(p.At.UnixNano()) / 1e9)
	if len(p.Errors) > 0 {
		m.errors.WithLabelValues("pass").Inc()
	}
}
