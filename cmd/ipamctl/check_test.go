package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http/httptest"
	"net/netip"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sandboxipam/sandboxipam/ipamd/datastore"
	"github.com/sandboxipam/sandboxipam/ipamd/history"
	"github.com/sandboxipam/sandboxipam/ipamd/introspect"
	"github.com/sandboxipam/sandboxipam/ipamd/introspect/schema"
	"github.com/sandboxipam/sandboxipam/ipamd/ipsource/static"
	"github.com/sandboxipam/sandboxipam/ipamd/nodecheck"
	"github.com/sandboxipam/sandboxipam/runtime"
)

// serveChecked is an ipamd API whose check finds what found says, with a
// real store and history behind who.
func serveChecked(t *testing.T, found []nodecheck.Disagreement) string {
	t.Helper()
	ctx := context.Background()
	h := history.New(16)
	store, err := datastore.Open(ctx, datastore.Options{Path: filepath.Join(t.TempDir(), "ck"), OnEvent: h.Record})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	src, _ := static.New(static.Config{CIDRs: []netip.Prefix{netip.MustParsePrefix("198.18.0.0/29")}})
	if err := src.Run(ctx, store); err != nil {
		t.Fatal(err)
	}
	k := datastore.Key{Network: "net", SandboxID: "sandbox-1", IfName: "eth0"}
	if _, err := store.Assign(ctx, k, datastore.Pod{Name: "web", Namespace: "prod"}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := store.Release(ctx, k); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Assign(ctx, datastore.Key{Network: "net", SandboxID: "sandbox-2", IfName: "eth0"}, datastore.Pod{Name: "web", Namespace: "prod"}); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(introspect.Handler(introspect.Deps{Store: store, Source: "static", History: h,
		Check: func(context.Context) nodecheck.Outcome {
			return nodecheck.Outcome{Report: nodecheck.Report{Assignments: 1, Disagreements: found}, At: time.Now(), Attempts: 1}
		},
		Sandboxes: func(context.Context) ([]runtime.Sandbox, error) {
			return []runtime.Sandbox{{ID: "sandbox-2", Name: "web", Namespace: "prod", State: runtime.StateReady}}, nil
		},
	}))
	t.Cleanup(srv.Close)
	return srv.Listener.Addr().String()
}

func TestCheckExitsNonZeroOnADisagreement(t *testing.T) {
	var stdout, stderr bytes.Buffer
	clean := serveChecked(t, nil)
	if code := run([]string{"--addr", clean, "check"}, &stdout, &stderr); code != 0 ||
		!strings.Contains(stdout.String(), "ipamd, the runtime and the kernel agree") {
		t.Fatalf("clean check exit %d:\n%s%s", code, stdout.String(), stderr.String())
	}
	stdout.Reset()
	dirty := serveChecked(t, []nodecheck.Disagreement{{Kind: nodecheck.NoRoute, Address: "198.18.0.2", SandboxID: "sandbox-2",
		Words: "198.18.0.2 is assigned to sandbox sandbox-2, and the node has no host veth sbx1 for it"}})
	if code := run([]string{"--addr", dirty, "check"}, &stdout, &stderr); code != 1 ||
		!strings.Contains(stdout.String(), "assigned-no-route    198.18.0.2 is assigned to sandbox sandbox-2") {
		t.Fatalf("check with a disagreement exit %d:\n%s%s", code, stdout.String(), stderr.String())
	}
	stdout.Reset()
	if code := run([]string{"--addr", dirty, "-o", "json", "check"}, &stdout, &stderr); code != 1 {
		t.Fatalf("check -o json exit %d", code)
	}
	var v schema.Check
	if err := json.Unmarshal(stdout.Bytes(), &v); err != nil || len(v.Disagreements) != 1 || v.Disagreements[0].Address != "198.18.0.2" {
		t.Fatalf("check -o json = %+v, %v", v, err)
	}
}

func TestWhoShowsHolderRuntimeAndHistory(t *testing.T) {
	addr := serveChecked(t, nil)
	var stdout, stderr bytes.Buffer
	if code := run([]string{"--addr", addr, "who", "198.18.0.1"}, &stdout, &stderr); code != 0 {
		t.Fatalf("who exit %d: %s", code, stderr.String())
	}
	out := stdout.String()
	for _, want := range []string{"ipamd holds no address for address \"198.18.0.1\"", "assigned", "released", "cni_del", "sandbox-1", "prod/web"} {
		if !strings.Contains(out, want) {
			t.Errorf("who 198.18.0.1 lacks %q:\n%s", want, out)
		}
	}
	stdout.Reset()
	if code := run([]string{"--addr", addr, "-o", "json", "who", "prod/web"}, &stdout, &stderr); code != 0 {
		t.Fatalf("who prod/web exit %d: %s", code, stderr.String())
	}
	var v schema.Who
	if err := json.Unmarshal(stdout.Bytes(), &v); err != nil {
		t.Fatal(err)
	}
	if v.QueryKind != "pod" || len(v.Holders) != 1 || v.Holders[0].Pod.SandboxID != "sandbox-2" || v.Holders[0].Pod.IP != "198.18.0.2" ||
		v.Holders[0].Runtime == nil || v.Holders[0].Runtime.State != "Ready" || len(v.History) != 3 {
		t.Fatalf("who prod/web = %+v", v)
	}
	if code := run([]string{"--addr", addr, "who"}, &stdout, &stderr); code != 2 {
		t.Fatalf("who without a query exit %d, want 2", code)
	}
}
