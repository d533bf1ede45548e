package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/sandboxipam/sandboxipam/ipamd/datastore"
)

// The pool's gauges are read from the datastore's one read model
// (Store.View), taken once per scrape under one lock: the numbers of one
// scrape add up, and a group or block that leaves the pool leaves the
// scrape.

// unprovenDesc is ipamd_datastore_unproven.
var unprovenDesc = prometheus.NewDesc(namespace+"_datastore_unproven",
	"1 while ipamd has no trusted checkpoint and the runtime and the node have not accounted for every pod's address: no address is handed out.",
	nil, nil)

// censusDesc is ipamd_addresses: the pool by group, family and state.
var censusDesc = prometheus.NewDesc(namespace+"_addresses",
	"Pool addresses by group (\"static\" or an ENI ID), family (ipv4, ipv6) and state: free, assigned, cooling (released, waiting out the cooldown), quarantined (a pod holds it while ipamd records it elsewhere), unproven (no trusted checkpoint yet).",
	[]string{"group", "family", "state"}, nil)

// rangeDesc is ipamd_pool_range_addresses: each block of the pool (a
// static CIDR, a delegated prefix; blocks of one address, as the aws
// source adds secondary IPs, are left to ipamd_addresses) by state.
var rangeDesc = prometheus.NewDesc(namespace+"_pool_range_addresses",
	"Addresses of each block of the pool (a static CIDR or a delegated prefix) by family, group and state: size (usable addresses; an IPv6 /64 is 1.8e19), assigned, cooling, quarantined (unproven included).",
	[]string{"range", "family", "group", "state"}, nil)

// retiringDesc is ipamd_retiring_range_held_addresses: the held addresses
// of each retiring block (see datastore's retire.go).
var retiringDesc = prometheus.NewDesc(namespace+"_retiring_range_held_addresses",
	"Addresses pods still hold in each retiring range: a range the node no longer has (its Node deleted, or registered again with other podCIDRs). Nothing is handed out of it; it leaves the pool when its last pod goes.",
	[]string{"range", "family", "group"}, nil)

// poolCollector reads the pool's view at scrape time.
type poolCollector struct {
	pool func() datastore.PoolView
}

func (c poolCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{unprovenDesc, censusDesc, rangeDesc, retiringDesc} {
		ch <- d
	}
}

func (c poolCollector) Collect(ch chan<- prometheus.Metric) {
	v := c.pool()
	gauge := func(d *prometheus.Desc, n float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, n, labels...)
	}
	unproven := 0.0
	if v.Proof.Unproven {
		unproven = 1
	}
	gauge(unprovenDesc, unproven)
	for k, n := range v.Census() {
		gauge(censusDesc, float64(n), k.Group, k.Family, string(k.State))
	}
	for _, r := range v.Ranges {
		p := r.Range.Prefix.String()
		if r.Retiring {
			gauge(retiringDesc, float64(r.Assigned), p, r.Family, r.Range.Group)
		}
		if r.Size <= 1 {
			continue
		}
		for state, n := range map[string]uint64{"size": r.Size, "assigned": r.Assigned, "cooling": r.Cooling, "quarantined": r.Quarantined} {
			gauge(rangeDesc, float64(n), p, r.Family, r.Range.Group, state)
		}
	}
}
