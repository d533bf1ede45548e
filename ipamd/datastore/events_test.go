package datastore_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/sandboxipam/sandboxipam/ipamd/datastore"
)

// TestEventsAndReleaseLogSayWhoAndWhy: every change reaches OnEvent once,
// with its reason, and every release is one log line naming the reason,
// the sandbox, the pod and the address.
func TestEventsAndReleaseLogSayWhoAndWhy(t *testing.T) {
	f := newFixture(t, "10.1.0.0/29")
	var mu sync.Mutex
	var got []string
	var logBuf bytes.Buffer
	s, err := datastore.Open(context.Background(), datastore.Options{Path: f.path, Now: f.clock.Now,
		Logger: slog.New(slog.NewTextHandler(&logBuf, nil)),
		OnEvent: func(es []datastore.Event) {
			mu.Lock()
			defer mu.Unlock()
			for _, e := range es {
				got = append(got, string(e.Kind)+" "+e.Reason+" "+e.Assignment.SandboxID+" "+e.Assignment.Address.IP.String())
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	f.fill(s)
	ctx := context.Background()
	mustAssign(t, s, key("a"), pod("a"), "10.1.0.1")
	mustAssign(t, s, key("a"), pod("a"), "10.1.0.1") // a repeated ADD changes nothing
	mustAssign(t, s, key("b"), pod("b"), "10.1.0.2")
	mustAssign(t, s, key("c"), pod("c"), "10.1.0.3")
	b := mustAssign(t, s, key("d"), pod("d"), "10.1.0.4")
	mustRelease(t, s, key("a"), "10.1.0.1")
	if _, _, err := s.ReleaseFor(ctx, key("c"), datastore.ReasonOperator); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ReleaseAssignments(ctx, []datastore.Assignment{b}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GC(ctx, "pods", nil); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"assigned  a 10.1.0.1", "assigned  b 10.1.0.2", "assigned  c 10.1.0.3", "assigned  d 10.1.0.4",
		"released cni_del a 10.1.0.1", "released operator c 10.1.0.3", "released runtime_gone d 10.1.0.4", "released cni_gc b 10.1.0.2",
	}
	mu.Lock()
	defer mu.Unlock()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	var lines []string
	for _, l := range strings.Split(logBuf.String(), "\n") {
		if strings.Contains(l, `msg="address released"`) {
			lines = append(lines, l)
		}
	}
	if len(lines) != 4 {
		t.Fatalf("%d release log lines, want 4:\n%s", len(lines), strings.Join(lines, "\n"))
	}
	for _, want := range []string{"reason=cni_del key.network=pods key.sandbox_id=a key.ifname=eth0 pod.name=a pod.namespace=default pod.uid=uid-a ip=10.1.0.1",
		"reason=operator", "reason=runtime_gone", "reason=cni_gc key.network=pods key.sandbox_id=b"} {
		if !strings.Contains(logBuf.String(), want) {
			t.Errorf("no release log line with %q in:\n%s", want, strings.Join(lines, "\n"))
		}
	}
}
