package monitoring

import (
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/sandboxipam/sandboxipam/cluster/reclaim"
)

func TestClusterRulesPassPromtool(t *testing.T) {
	if out := runPromtool(t, nil, "check", "rules", "cluster.rules.yaml"); !strings.Contains(out, "SUCCESS: 4 rules found") {
		t.Fatalf("promtool check rules:\n%s", out)
	}
	runPromtool(t, nil, "test", "rules", "cluster.rules.test.yaml")
	rules, tests := read(t, "cluster.rules.yaml"), read(t, "cluster.rules.test.yaml")
	alerts := regexp.MustCompile(`(?m)^\s+- alert: (\w+)$`).FindAllStringSubmatch(rules, -1)
	fired := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)alertname: (\w+)\n\s+exp_alerts:\n\s+- exp_labels`).FindAllStringSubmatch(tests, -1) {
		fired[m[1]] = true
	}
	if len(alerts) != 4 {
		t.Fatalf("found %d alerts, want 4", len(alerts))
	}
	for _, a := range alerts {
		if !fired[a[1]] {
			t.Errorf("no unit test fires %s", a[1])
		}
	}
}

// The cluster rules name only what the reclaimer exports, and its scrape
// passes promtool check metrics.
func TestClusterRulesNameOnlyReclaimerMetrics(t *testing.T) {
	reg := reclaim.NewMetrics().Registry()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, mf := range mfs {
		names[mf.GetName()] = true
	}
	used := regexp.MustCompile(`\bsandboxipam_[a-z0-9_]+`).FindAllString(read(t, "cluster.rules.yaml"), -1)
	if len(used) == 0 {
		t.Fatal("the cluster rules name no metric")
	}
	for _, n := range used {
		if !names[n] {
			t.Errorf("cluster.rules.yaml names %s, which the reclaimer does not export", n)
		}
	}
	if !names["sandboxipam_cluster_duplicate_addresses"] {
		t.Error("the reclaimer does not export sandboxipam_cluster_duplicate_addresses")
	}
	rec := httptest.NewRecorder()
	promhttp.HandlerFor(reg, promhttp.HandlerOpts{}).ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	runPromtool(t, rec.Body.Bytes(), "check", "metrics")
}
