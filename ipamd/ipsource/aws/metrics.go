package aws

import "github.com/prometheus/client_golang/prometheus"

func newRefusedCounter() *prometheus.CounterVec {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "ipamd", Subsystem: "aws", Name: "refused_addresses_total",
		Help: "Addresses and prefixes EC2 offered (in an answer, or on an ENI read back) that the pool did not take, or a shrink did not give back, by reason: primary (an ENI's primary address, the node's own included), outside_subnet, already_in_pool, not_on_eni (listed in the answer, absent from the ENI read back).",
	}, []string{"reason"})
	for _, r := range RefusalReasons {
		c.WithLabelValues(r)
	}
	return c
}

// Collectors are the source's metrics, for ipamd's registry.
func (s *Source) Collectors() []prometheus.Collector { return []prometheus.Collector{s.refused} }
