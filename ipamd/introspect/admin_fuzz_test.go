package introspect_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"unicode"

	"github.com/sandboxipam/sandboxipam/ipamd/introspect"
	"github.com/sandboxipam/sandboxipam/ipamd/introspect/schema"
	"github.com/sandboxipam/sandboxipam/ipamd/reconcile"
)

// FuzzDecodeRelease: whatever the body, POST /v1/release on the admin
// handler answers 200 or 400, never panics, and reaches Release only with
// a request DecodeRelease accepts: every field present, printable and
// short, surviving a JSON round trip unchanged.
func FuzzDecodeRelease(f *testing.F) {
	for _, s := range []string{
		`{"network":"n","sandboxID":"93e629d853d9","ifName":"eth0"}`, `{"network":"n","sandboxID":"a","ifName":"eth0","force":true}`,
		`{}`, `null`, `[]`, `{"network":"n","sandboxID":"a","ifName":"eth0"} x`, `{"sandboxID":"\u0000"}`, "{\"network\":\"\xff\"}",
	} {
		f.Add([]byte(s))
	}
	var seen []schema.ReleaseRequest
	h := introspect.AdminHandler(introspect.Deps{Store: newStore(f),
		Release: func(_ context.Context, req schema.ReleaseRequest) (schema.Release, error) {
			seen = append(seen, req)
			return schema.Release{}, nil
		}})
	f.Fuzz(func(t *testing.T, body []byte) {
		seen = seen[:0]
		req, err := introspect.DecodeRelease(bytes.NewReader(body))
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, schema.PathRelease, bytes.NewReader(body)))
		if err != nil {
			if rec.Code != http.StatusBadRequest || len(seen) != 0 {
				t.Fatalf("rejected body %q answered %d and reached Release %d times", body, rec.Code, len(seen))
			}
			return
		}
		if rec.Code != http.StatusOK || len(seen) != 1 || seen[0] != req {
			t.Fatalf("accepted body %q answered %d, Release saw %+v, want %+v", body, rec.Code, seen, req)
		}
		for _, v := range []string{req.Network, req.SandboxID, req.IfName} {
			if v == "" || len(v) > 256 || strings.ContainsFunc(v, func(r rune) bool { return !unicode.IsPrint(r) }) {
				t.Fatalf("accepted field %q", v)
			}
		}
		again, _ := json.Marshal(req)
		if back, err := introspect.DecodeRelease(bytes.NewReader(again)); err != nil || back != req {
			t.Fatalf("round trip of %+v = %+v, %v", req, back, err)
		}
	})
}

// FuzzParseReconcile: whatever the query, POST /v1/reconcile answers 200
// or 400 and runs a pass only for a query ParseReconcile accepts, with the
// dry run it parsed.
func FuzzParseReconcile(f *testing.F) {
	for _, s := range []string{"", "dryRun=true", "dryRun=false", "dryRun=maybe", "dryRun=1&dryRun=0", "force=1", "%zz", ";"} {
		f.Add(s)
	}
	var runs []bool
	h := introspect.AdminHandler(introspect.Deps{Store: newStore(f),
		Reconcile: func(_ context.Context, dryRun bool) (reconcile.Result, error) {
			runs = append(runs, dryRun)
			return reconcile.Result{DryRun: dryRun}, nil
		}})
	f.Fuzz(func(t *testing.T, query string) {
		runs = runs[:0]
		dryRun, err := introspect.ParseReconcile(query)
		r := httptest.NewRequest(http.MethodPost, schema.PathReconcile, nil)
		r.URL.RawQuery = query
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		switch {
		case err != nil && (rec.Code != http.StatusBadRequest || len(runs) != 0):
			t.Fatalf("rejected query %q answered %d and ran %d passes", query, rec.Code, len(runs))
		case err == nil && (rec.Code != http.StatusOK || len(runs) != 1 || runs[0] != dryRun):
			t.Fatalf("accepted query %q answered %d, passes %v, want one with dryRun %v", query, rec.Code, runs, dryRun)
		}
	})
}
