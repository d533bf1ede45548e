package metrics_test

import (
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/sandboxipam/sandboxipam/ipamd/api/wire"
	"github.com/sandboxipam/sandboxipam/ipamd/datastore"
	"github.com/sandboxipam/sandboxipam/ipamd/metrics"
	"github.com/sandboxipam/sandboxipam/ipamd/reconcile"
)

func TestMetricsExposition(t *testing.T) {
	restarts := 2
	m := metrics.New(metrics.Sources{
		Pool:            func() datastore.PoolView { return datastore.PoolView{} },
		AdapterRestarts: func() int { return restarts },
	})
	m.ObserveCall("Add", 800*time.Microsecond, nil)
	m.ObserveCall("Add", 2*time.Millisecond, &wire.Error{Code: wire.CodeResourceExhausted, Message: "full"})
	m.ObserveCall("Del", time.Millisecond, nil)
	m.ObserveReconcile(reconcile.Result{Released: make([]datastore.Assignment, 3)})
	m.ObserveReconcile(reconcile.Result{DryRun: true, Released: make([]datastore.Assignment, 5)})
	m.ObserveReconcile(reconcile.Result{Err: "list sandboxes: runtime unavailable"})

	body := scrape(t, m)
	for _, line := range []string{
		"ipamd_adapter_restarts_total 2", "ipamd_reconcile_errors_total 1",
		`ipamd_reconcile_runs_total{dry_run="false"} 2`, `ipamd_reconcile_runs_total{dry_run="true"} 1`,
		`ipamd_cni_request_duration_seconds_count{code="OK",method="Del"} 1`,
	} {
		if !strings.Contains(body, line+"\n") {
			t.Errorf("/metrics lacks %q", line)
		}
	}

	restarts = 3
	body = scrape(t, m)
	for _, line := range []string{
		"ipamd_adapter_restarts_total 3",
		`ipamd_cni_request_duration_seconds_count{code="OK",method="Add"} 1`,
		`ipamd_cni_request_duration_seconds_count{code="ResourceExhausted",method="Add"} 1`,
	} {
		if !strings.Contains(body, line+"\n") {
			t.Errorf("/metrics lacks %q", line)
		}
	}
	// Removed after a release deprecated (deploy/monitoring/README.md).
	for _, gone := range []string{"ipamd_ips", "ipamd_reconcile_released_ips_total", "ipamd_adapter_healthy"} {
		if strings.Contains(body, "\n"+gone+"{") || strings.Contains(body, "\n"+gone+" ") {
			t.Errorf("/metrics still exports the removed %s", gone)
		}
	}
}

func TestRegistriesAreIndependent(t *testing.T) {
	// Two daemons in one process must not collide on a shared registry.
	a := metrics.New(metrics.Sources{})
	b := metrics.New(metrics.Sources{})
	a.ObserveReconcile(reconcile.Result{Released: make([]datastore.Assignment, 1)})
	if strings.Contains(scrape(t, b), `ipamd_reconcile_runs_total{dry_run="false"} 1`) {
		t.Fatal("a's counter shows in b's registry")
	}
}

func scrape(t *testing.T, m *metrics.Metrics) string {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body, _ := io.ReadAll(rec.Result().Body)
	return string(body)
}
