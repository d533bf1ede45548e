package metrics_test

import (
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	"github.com/sandboxipam/sandboxipam/ipamd/datastore"
	"github.com/sandboxipam/sandboxipam/ipamd/ipsource"
	"github.com/sandboxipam/sandboxipam/ipamd/metrics"
	"github.com/sandboxipam/sandboxipam/ipamd/reconcile"
)

func held(sandbox string) datastore.Assignment {
	return datastore.Assignment{Key: datastore.Key{Network: "n", SandboxID: sandbox, IfName: "eth0"},
		Address: ipsource.Address{IP: netip.MustParseAddr("10.0.0.1")}}
}

// TestNewMetricsExactValues: the census, releases by reason, adapter state
// and the unlisted assignments' count and age after a scripted sequence.
func TestNewMetricsExactValues(t *testing.T) {
	t0 := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	now := t0
	state, unproven := "starting", false
	m := metrics.New(metrics.Sources{
		Pool: func() datastore.PoolView {
			free := uint64(5) // as Store.View computes it: none while unproven
			if unproven {
				free = 0
			}
			return datastore.PoolView{Proof: datastore.ProofState{Unproven: unproven}, Groups: []datastore.GroupCount{
				{Group: "eni-1", Family: "ipv4", Total: 7, Assigned: 2, Free: free},
				{Group: "static", Family: "ipv6", Total: 7, Quarantined: 7},
			}}
		},
		AdapterState: func() string { return state },
		Now:          func() time.Time { return now },
	})
	m.ObserveEvents([]datastore.Event{
		{Kind: datastore.EventAssigned}, {Kind: datastore.EventAssigned}, {Kind: datastore.EventAdopted},
		{Kind: datastore.EventReleased, Reason: datastore.ReasonCNIDel},
		{Kind: datastore.EventReleased, Reason: datastore.ReasonRuntimeGone},
		{Kind: datastore.EventReleased, Reason: datastore.ReasonRuntimeGone},
	})
	// a and b unlisted from t0; at t0+30s b is listed again and c joins.
	m.ObserveReconcile(reconcile.Result{At: t0, Unlisted: []datastore.Assignment{held("a"), held("b")}})
	m.ObserveReconcile(reconcile.Result{At: t0.Add(30 * time.Second), Unlisted: []datastore.Assignment{held("a"), held("c")}})
	// A failed pass and a dry run change nothing.
	m.ObserveReconcile(reconcile.Result{At: t0.Add(40 * time.Second), Err: "list sandboxes: down"})
	m.ObserveReconcile(reconcile.Result{At: t0.Add(40 * time.Second), DryRun: true})
	now = t0.Add(90 * time.Second)
	body := scrape(t, m)
	for _, line := range []string{
		`ipamd_addresses{family="ipv4",group="eni-1",state="free"} 5`,
		`ipamd_addresses{family="ipv4",group="eni-1",state="assigned"} 2`,
		`ipamd_addresses{family="ipv6",group="static",state="quarantined"} 7`,
		`ipamd_addresses{family="ipv6",group="static",state="unproven"} 0`,
		"ipamd_datastore_unproven 0",
		`ipamd_assigned_addresses_total{how="cni_add"} 2`, `ipamd_assigned_addresses_total{how="adopted"} 1`,
		`ipamd_released_addresses_total{reason="cni_del"} 1`, `ipamd_released_addresses_total{reason="runtime_gone"} 2`,
		`ipamd_released_addresses_total{reason="cni_gc"} 0`, `ipamd_released_addresses_total{reason="operator"} 0`,
		`ipamd_adapter_state{state="starting"} 1`, `ipamd_adapter_state{state="healthy"} 0`,
		"ipamd_unlisted_assignments 2", "ipamd_oldest_unlisted_assignment_seconds 90",
	} {
		if !strings.Contains(body, line+"\n") {
			t.Errorf("/metrics lacks %q", line)
		}
	}
	state, unproven = "healthy", true
	m.ObserveReconcile(reconcile.Result{At: now})
	body = scrape(t, m)
	for _, line := range []string{`ipamd_adapter_state{state="healthy"} 1`, `ipamd_adapter_state{state="starting"} 0`,
		`ipamd_addresses{family="ipv4",group="eni-1",state="free"} 0`,
		`ipamd_addresses{family="ipv6",group="static",state="unproven"} 7`,
		`ipamd_addresses{family="ipv6",group="static",state="quarantined"} 0`, "ipamd_datastore_unproven 1",
		"ipamd_unlisted_assignments 0", "ipamd_oldest_unlisted_assignment_seconds 0"} {
		if !strings.Contains(body, line+"\n") {
			t.Errorf("/metrics lacks %q", line)
		}
	}
}

// TestScrapePassesPromlint runs the Prometheus linter (what promtool
// check metrics runs) over a scrape with every collector registered.
func TestScrapePassesPromlint(t *testing.T) {
	m := metrics.New(metrics.Sources{
		Pool: func() datastore.PoolView {
			return datastore.PoolView{Stats: datastore.Stats{Total: 4, Free: 4}, Groups: []datastore.GroupCount{{Group: "static", Family: "ipv4", Total: 4}},
				Ranges: []datastore.RangeInfo{{Range: ipsource.Range{Prefix: netip.MustParsePrefix("198.18.0.0/30"), Group: "static"}, Family: "ipv4", Size: 4}}}
		},
		AdapterRestarts: func() int { return 0 },
		AdapterState:    func() string { return "healthy" },
		ReconcileGrace:  30 * time.Second,
	})
	m.ObserveCall("Add", time.Millisecond, nil)
	if body := scrape(t, m); !strings.Contains(body, "ipamd_reconcile_grace_seconds 30\n") {
		t.Errorf("/metrics lacks ipamd_reconcile_grace_seconds 30")
	}
	mfs, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	problems, err := promlint.NewWithMetricFamilies(mfs).Lint()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("promlint: %s: %s", p.Metric, p.Text)
	}
}

// TestRangeMetric: each block of more than one address, by state, with an
// IPv6 /64's size as large as it is; blocks of one (aws secondary IPs)
// are left to ipamd_addresses.
func TestRangeMetric(t *testing.T) {
	m := metrics.New(metrics.Sources{
		Pool: func() datastore.PoolView {
			return datastore.PoolView{Ranges: []datastore.RangeInfo{
				{Range: ipsource.Range{Prefix: netip.MustParsePrefix("198.18.0.0/24"), Group: "static"}, Family: "ipv4", Size: 254, Assigned: 3, Cooling: 1},
				{Range: ipsource.Range{Prefix: netip.MustParsePrefix("2001:db8::/64"), Group: "static"}, Family: "ipv6", Size: 1<<64 - 1, Assigned: 3},
				{Range: ipsource.Range{Prefix: netip.MustParsePrefix("10.0.0.9/32"), Group: "eni-1"}, Family: "ipv4", Size: 1},
			}}
		},
		AdapterState: func() string { return "healthy" },
	})
	body := scrape(t, m)
	for _, line := range []string{
		`ipamd_pool_range_addresses{family="ipv4",group="static",range="198.18.0.0/24",state="size"} 254`,
		`ipamd_pool_range_addresses{family="ipv4",group="static",range="198.18.0.0/24",state="assigned"} 3`,
		`ipamd_pool_range_addresses{family="ipv4",group="static",range="198.18.0.0/24",state="cooling"} 1`,
		`ipamd_pool_range_addresses{family="ipv6",group="static",range="2001:db8::/64",state="size"} 1.8446744073709552e+19`,
		`ipamd_pool_range_addresses{family="ipv6",group="static",range="2001:db8::/64",state="quarantined"} 0`,
	} {
		if !strings.Contains(body, line+"\n") {
			t.Errorf("scrape lacks %s", line)
		}
	}
	if strings.Contains(body, "10.0.0.9/32") {
		t.Errorf("a block of one address is in the range metric:\n%s", body)
	}
}
