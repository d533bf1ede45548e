package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"net/netip"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sandboxipam/sandboxipam/ipamd/api/hostveth"
	"github.com/sandboxipam/sandboxipam/ipamd/datastore"
	"github.com/sandboxipam/sandboxipam/ipamd/history"
	"github.com/sandboxipam/sandboxipam/ipamd/hostlinks"
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
	return serveCheck(t, found, nil)
}

// serveCheck is serveChecked, or with checked, an ipamd whose check is the
// real nodecheck.Run over src and the store's assignments (sandbox-2's
// 198.18.0.2).
func serveCheck(t *testing.T, found []nodecheck.Disagreement, checked *nodecheck.Sources) string {
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
	check := func(context.Context) nodecheck.Outcome {
		return nodecheck.Outcome{Report: nodecheck.Report{Assignments: 1, Disagreements: found}, At: time.Now(), Attempts: 1}
	}
	if checked != nil {
		checked.Assignments = store.Assignments
		check = func(ctx context.Context) nodecheck.Outcome { return nodecheck.Run(ctx, *checked) }
	}
	srv := httptest.NewServer(introspect.Handler(introspect.Deps{Store: store, Source: "static", History: h, Check: check,
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

// A check that could not look does not pass: with no adapter, the runtime
// down or the kernel unreadable, its first line says what it did not
// compare, it exits 3, and -o json carries it; a disagreement still wins
// (exit 1).
func TestCheckThatCouldNotLookDoesNotPass(t *testing.T) {
	veth := hostveth.Name("sbx", "sandbox-2", "eth0")
	linked := func(context.Context) (hostlinks.Snapshot, error) {
		return hostlinks.Snapshot{Links: map[string][]netip.Addr{veth: {netip.MustParseAddr("198.18.0.2")}}}, nil
	}
	runtimeDown := func(context.Context) ([]runtime.Sandbox, error) {
		return nil, errors.New("dial unix runtime.sock: connection refused")
	}
	unlinked := func(context.Context) (hostlinks.Snapshot, error) { return hostlinks.Snapshot{}, nil }
	unreadable := func(context.Context) (hostlinks.Snapshot, error) {
		return hostlinks.Snapshot{}, errors.New("netlink: operation not permitted")
	}
	for _, c := range []struct {
		name  string
		src   nodecheck.Sources
		code  int
		lines []string
	}{
		{"no adapter", nodecheck.Sources{Node: linked, VethPrefix: "sbx"}, 3, []string{
			"NOT COMPARED: the runtime's sandboxes: ipamd has no runtime adapter to list sandboxes",
			"INCOMPLETE, no disagreement in what was compared: 1 assignment(s), 0 sandbox(es), 1 pod link(s) compared",
		}},
		{"runtime down, kernel unreadable", nodecheck.Sources{Sandboxes: runtimeDown, Node: unreadable, VethPrefix: "sbx"}, 3, []string{
			"NOT COMPARED: the runtime's sandboxes: list sandboxes: dial unix runtime.sock: connection refused",
			"NOT COMPARED: the kernel's pod links and routes: netlink: operation not permitted",
			"INCOMPLETE, no disagreement in what was compared: 1 assignment(s), 0 sandbox(es), 0 pod link(s) compared",
		}},
		{"a disagreement wins", nodecheck.Sources{Node: unlinked, VethPrefix: "sbx"}, 1, []string{
			"NOT COMPARED: the runtime's sandboxes: ipamd has no runtime adapter to list sandboxes",
			"assigned-no-route    198.18.0.2 is assigned to sandbox sandbox-2",
			"1 disagreement(s): 1 assignment(s), 0 sandbox(es), 0 pod link(s) compared",
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			addr := serveCheck(t, nil, &c.src)
			stdout, stderr, code := ctl(t, "check", "--addr", addr)
			got := strings.Split(strings.TrimSuffix(stdout, "\n"), "\n")
			if code != c.code || len(got) != len(c.lines) {
				t.Fatalf("exit %d, want %d, and %d lines:\n%s%s", code, c.code, len(c.lines), stdout, stderr)
			}
			for i, want := range c.lines {
				if !strings.HasPrefix(got[i], want) {
					t.Errorf("line %d = %q, want it to begin %q", i+1, got[i], want)
				}
			}
			stdout, _, code = ctl(t, "check", "-o", "json", "--addr", addr)
			var v schema.Check
			if err := json.Unmarshal([]byte(stdout), &v); err != nil || code != c.code || len(v.NotCompared) == 0 || v.NotCompared[0].Source != schema.SourceRuntime {
				t.Fatalf("check -o json: exit %d, %v: %+v", code, err, v)
			}
		})
	}
	if _, stderr, _ := ctl(t, "check", "--addr", serveCheck(t, nil, &nodecheck.Sources{Node: linked, VethPrefix: "sbx"})); !strings.Contains(stderr,
		"ipamctl: check incomplete: no disagreement in what was compared, but runtime not compared") {
		t.Errorf("stderr %q", stderr)
	}
}
