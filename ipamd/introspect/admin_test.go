package introspect_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/sandboxipam/sandboxipam/ipamd/datastore"
	"github.com/sandboxipam/sandboxipam/ipamd/introspect"
	"github.com/sandboxipam/sandboxipam/ipamd/introspect/schema"
	"github.com/sandboxipam/sandboxipam/ipamd/reconcile"
)

// The TCP listener's handler serves reads and refuses every call that
// could change state, whatever the method, naming the admin socket; the
// release and reconcile functions are never reached.
func TestTCPHandlerServesReadsOnly(t *testing.T) {
	store := newStore(t)
	key := datastore.Key{Network: "net", SandboxID: "victim", IfName: "eth0"}
	if _, err := store.Assign(t.Context(), key, datastore.Pod{Name: "victim"}); err != nil {
		t.Fatal(err)
	}
	calls := 0
	srv := httptest.NewServer(introspect.Handler(introspect.Deps{Store: store, Source: "static", AdminSocket: "/run/x/admin.sock",
		Reconcile: func(context.Context, bool) (reconcile.Result, error) { calls++; return reconcile.Result{}, nil },
		Release: func(context.Context, schema.ReleaseRequest) (schema.Release, error) {
			calls++
			return schema.Release{}, nil
		}}))
	defer srv.Close()
	for _, c := range []struct{ method, path string }{
		{"POST", schema.PathRelease}, {"POST", schema.PathReconcile}, {"POST", schema.PathReconcile + "?dryRun=true"},
		{"PUT", schema.PathRelease}, {"DELETE", schema.PathPods}, {"GET", schema.PathRelease}, {"POST", schema.PathPods}, {"PATCH", "/v1/other"},
	} {
		var e schema.Error
		if code := get(t, srv, c.method, c.path, &e); code != http.StatusForbidden ||
			!strings.Contains(e.Error, "reads only") || !strings.Contains(e.Error, "admin socket /run/x/admin.sock") {
			t.Errorf("%s %s = %d %q; want 403 naming the admin socket", c.method, c.path, code, e.Error)
		}
	}
	if calls != 0 {
		t.Errorf("release or reconcile ran %d times through the TCP handler", calls)
	}
	var pods schema.Pods
	if code := get(t, srv, "GET", schema.PathPods, &pods); code != 200 || len(pods.Pods) != 1 || pods.Pods[0].SandboxID != "victim" || pods.Pods[0].IP != "198.18.0.2" {
		t.Errorf("GET /v1/pods = %d %+v", code, pods)
	}
	if code := get(t, srv, "GET", "/v1/nothing", nil); code != http.StatusNotFound {
		t.Errorf("GET /v1/nothing = %d, want 404", code)
	}
	if _, ok := store.Lookup(key); !ok {
		t.Error("the victim's assignment is gone")
	}
}

// The admin handler maps the release errors callers branch on to their
// status codes and passes the decoded request through unchanged.
func TestAdminReleaseStatusCodes(t *testing.T) {
	var got []schema.ReleaseRequest
	errs := map[string]error{"gone": introspect.ErrNotHeld, "alive": introspect.ErrStillInUse}
	srv := httptest.NewServer(introspect.AdminHandler(introspect.Deps{Store: newStore(t),
		Release: func(_ context.Context, req schema.ReleaseRequest) (schema.Release, error) {
			got = append(got, req)
			return schema.Release{Released: schema.Pod{SandboxID: req.SandboxID}, Forced: req.Force}, errs[req.SandboxID]
		}}))
	defer srv.Close()
	for _, c := range []struct {
		body string
		code int
	}{
		{`{"network":"n","sandboxID":"ok","ifName":"eth0","force":true}`, 200},
		{`{"network":"n","sandboxID":"gone","ifName":"eth0"}`, 404},
		{`{"network":"n","sandboxID":"alive","ifName":"eth0"}`, 409},
		{`{"network":"n","sandboxID":"","ifName":"eth0"}`, 400},
		{`{"network":"n","sandboxID":"x","ifName":"eth0","uid":0}`, 400},
		{`{"network":"n","sandboxID":"x","ifName":"eth0"}{}`, 400},
	} {
		resp, err := srv.Client().Post(srv.URL+schema.PathRelease, "application/json", strings.NewReader(c.body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != c.code {
			t.Errorf("release %s = %d, want %d", c.body, resp.StatusCode, c.code)
		}
	}
	want := []schema.ReleaseRequest{{Network: "n", SandboxID: "ok", IfName: "eth0", Force: true},
		{Network: "n", SandboxID: "gone", IfName: "eth0"}, {Network: "n", SandboxID: "alive", IfName: "eth0"}}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Errorf("Release saw %+v, want %+v", got, want)
	}
}

func TestDecodeReleaseNamesTheField(t *testing.T) {
	for body, want := range map[string]string{
		`{"network":"","sandboxID":"a","ifName":"eth0"}`:                              "network must not be empty",
		`{"network":"n","sandboxID":"a"}`:                                             "ifName must not be empty",
		`{"network":"n","sandboxID":"` + strings.Repeat("a", 257) + `","ifName":"e"}`: "sandboxID must be at most 256 bytes, got 257",
		`{"network":"n","sandboxID":"a\nb","ifName":"eth0"}`:                          `sandboxID must be printable UTF-8, got "a\nb"`,
		`{"network":"n","sandboxID":"a","ifName":"eth0","force":"yes"}`:               "cannot unmarshal string",
		`[]`: "cannot unmarshal array",
	} {
		_, err := introspect.DecodeRelease(strings.NewReader(body))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("DecodeRelease(%s) = %v, want it to say %q", body, err, want)
		}
	}
}

func TestParseReconcile(t *testing.T) {
	for q, want := range map[string]string{"dryRun=true": "", "": "", "dryRun=1": "", "dryRun=maybe": `dryRun must be true or false, got "maybe"`,
		"dryRun=true&dryRun=false": "dryRun given 2 times", "force=true": `reconcile takes only dryRun, got "force"`, "%zz": "invalid URL escape"} {
		_, err := introspect.ParseReconcile(q)
		if (want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), want)) {
			t.Errorf("ParseReconcile(%q) = %v, want %q", q, err, want)
		}
	}
}
