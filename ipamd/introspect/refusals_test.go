package introspect_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/sandboxipam/sandboxipam/ipamd/introspect"
	"github.com/sandboxipam/sandboxipam/ipamd/introspect/schema"
	"github.com/sandboxipam/sandboxipam/ipamd/metrics"
)

// 1,000 refused calls on the loopback listener, one a second on a clock
// the test steps: the log holds the first 5 of each minute (17 minutes
// began, 85 lines), each first line of a minute says how many the minute
// before left out (16 times 55), and the metric counts all 1,000. Each
// was a WARN line before.
func TestRefusedCallsAreRateLimitedAndCounted(t *testing.T) {
	var logs bytes.Buffer
	now := t0
	m := metrics.New(metrics.Sources{})
	h := introspect.Handler(introspect.Deps{Store: newStore(t), Source: "static", Now: func() time.Time { return now },
		Logger: slog.New(slog.NewJSONHandler(&logs, nil)), OnRefused: m.ObserveLoopbackRefused})
	for i := range 1000 {
		path := schema.PathRelease
		if i%2 == 1 {
			path = schema.PathReconcile
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, path, nil))
		if rec.Code != http.StatusForbidden {
			t.Fatalf("call %d: %d, want 403", i, rec.Code)
		}
		now = now.Add(time.Second)
	}
	lines, suppressed := 0, 0
	for sc := bufio.NewScanner(&logs); sc.Scan(); {
		var line struct {
			Msg        string `json:"msg"`
			Suppressed int    `json:"suppressed_since_last_logged"`
		}
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatalf("log line %q: %v", sc.Text(), err)
		}
		lines++
		suppressed += line.Suppressed
	}
	if lines != 85 || suppressed != 880 {
		t.Fatalf("%d log lines saying %d left out; want 85 lines (5 a minute, 17 minutes) saying 880 (16 minutes of 55)", lines, suppressed)
	}
	if got := counterValue(t, m, "ipamd_loopback_changes_refused_total"); got != 1000 {
		t.Fatalf("ipamd_loopback_changes_refused_total = %v, want 1000", got)
	}
}

func counterValue(t *testing.T, m *metrics.Metrics, name string) float64 {
	t.Helper()
	mfs, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name && len(mf.GetMetric()) == 1 {
			return mf.GetMetric()[0].GetCounter().GetValue()
		}
	}
	t.Fatalf("no metric %s", name)
	return 0
}
