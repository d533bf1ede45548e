package introspect_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/sandboxipam/sandboxipam/ipamd/datastore"
	"github.com/sandboxipam/sandboxipam/ipamd/history"
	"github.com/sandboxipam/sandboxipam/ipamd/introspect"
	"github.com/sandboxipam/sandboxipam/ipamd/introspect/schema"
	"github.com/sandboxipam/sandboxipam/runtime"
)

func whoHandler(t testing.TB, store *datastore.Store) http.Handler {
	h := history.New(8)
	h.Record([]datastore.Event{{Kind: datastore.EventReleased, Reason: datastore.ReasonCNIDel,
		Assignment: datastore.Assignment{Key: datastore.Key{Network: "n", SandboxID: "abcdef0123", IfName: "eth0"}}}})
	return introspect.Handler(introspect.Deps{Store: store, History: h,
		Sandboxes: func(context.Context) ([]runtime.Sandbox, error) {
			return []runtime.Sandbox{{ID: "feedface99", Name: "db-0", Namespace: "prod", State: runtime.StateReady}}, nil
		}})
}

func getPath(h http.Handler, path string) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
	return rec
}

func TestWhoRejectsAnEmptyQueryNamingTheField(t *testing.T) {
	rec := getPath(whoHandler(t, newStore(t)), schema.PathWho+"?q=%20")
	if rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), "q is empty") {
		t.Fatalf("GET /v1/who?q= = %d %s", rec.Code, rec.Body.String())
	}
	rec = getPath(introspect.Handler(introspect.Deps{Store: newStore(t)}), schema.PathCheck)
	if rec.Code != http.StatusServiceUnavailable {
		t.Fatalf("GET /v1/check without a checker = %d, want 503", rec.Code)
	}
}

func TestWhoReadsTheQuery(t *testing.T) {
	h := whoHandler(t, newStore(t))
	for q, kind := range map[string]string{
		"198.18.0.3": "address", "::ffff:198.18.0.3": "address", "abcdef": "sandbox", "abcde": "pod",
		"feedface99": "sandbox", "prod/db-0": "pod", "db-0": "pod",
	} {
		rec := getPath(h, schema.PathWho+"?q="+url.QueryEscape(q))
		var v schema.Who
		if err := json.Unmarshal(rec.Body.Bytes(), &v); err != nil || rec.Code != http.StatusOK || v.QueryKind != kind {
			t.Errorf("who %q = %d %s, want kind %s", q, rec.Code, rec.Body.String(), kind)
		}
	}
	var v schema.Who
	_ = json.Unmarshal(getPath(h, schema.PathWho+"?q=prod/db-0").Body.Bytes(), &v)
	if sb, ok := v.Sandboxes["feedface99"]; !ok || !sb.Listed || sb.State != "Ready" {
		t.Fatalf("who prod/db-0 did not show the runtime's sandbox that holds nothing: %+v", v)
	}
}

// FuzzWho: any query answers 200 with a who document or 400, never
// anything else.
func FuzzWho(f *testing.F) {
	for _, s := range []string{"198.18.0.1", "::1", "abcdef", "prod/db-0", "", " ", "%zz", "1.2.3.4%eth0", strings.Repeat("a", 300)} {
		f.Add(s)
	}
	h := whoHandler(f, newStore(f))
	f.Fuzz(func(t *testing.T, q string) {
		rec := getPath(h, schema.PathWho+"?q="+url.QueryEscape(q))
		switch rec.Code {
		case http.StatusOK:
			var v schema.Who
			if err := json.Unmarshal(rec.Body.Bytes(), &v); err != nil || v.Holders == nil || v.History == nil {
				t.Fatalf("who %q: %v: %s", q, err, rec.Body.String())
			}
		case http.StatusBadRequest:
		default:
			t.Fatalf("who %q = %d", q, rec.Code)
		}
	})
}
