package history

import (
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/sandboxipam/sandboxipam/ipamd/datastore"
	"github.com/sandboxipam/sandboxipam/ipamd/ipsource"
)

func event(i int, kind datastore.EventKind, sandbox, ip string) datastore.Event {
	return datastore.Event{At: time.Unix(int64(i), 0), Kind: kind, Assignment: datastore.Assignment{
		Key: datastore.Key{Network: "n", SandboxID: sandbox, IfName: "eth0"},
		Pod: datastore.Pod{Name: "web-0", Namespace: "prod"}, Address: ipsource.Address{IP: netip.MustParseAddr(ip)}}}
}

func TestRingKeepsTheLastEventsInOrder(t *testing.T) {
	h := New(3)
	for i := range 5 {
		h.Record([]datastore.Event{event(i, datastore.EventAssigned, fmt.Sprint("sb", i), "10.0.0.1")})
	}
	got := h.Select(func(e datastore.Event) bool { return e.Assignment.Address.IP == netip.MustParseAddr("10.0.0.1") })
	if len(got) != 3 || got[0].Assignment.SandboxID != "sb2" || got[2].Assignment.SandboxID != "sb4" {
		t.Fatalf("kept %+v, want sb2, sb3, sb4", got)
	}
	if d := h.Dropped(); d != 2 {
		t.Fatalf("dropped %d, want 2", d)
	}
}

func TestSelectBySandboxAndPod(t *testing.T) {
	h := New(0)
	h.Record([]datastore.Event{
		event(1, datastore.EventAssigned, "a", "10.0.0.1"),
		event(2, datastore.EventReleased, "a", "10.0.0.1"),
		event(3, datastore.EventAssigned, "b", "10.0.0.2"),
	})
	byPod := func(name string) []datastore.Event {
		return h.Select(func(e datastore.Event) bool { return PodMatches(e.Assignment.Pod, name) })
	}
	if got := h.Select(func(e datastore.Event) bool { return e.Assignment.SandboxID == "a" }); len(got) != 2 || got[1].Kind != datastore.EventReleased {
		t.Fatalf("sandbox a: %+v", got)
	}
	if got := byPod("prod/web-0"); len(got) != 3 {
		t.Fatalf("ForPod(prod/web-0) = %d events, want 3", len(got))
	}
	if got := byPod("web-0"); len(got) != 3 {
		t.Fatalf("ForPod(web-0) = %d events, want 3", len(got))
	}
	if got := byPod("other/web-0"); len(got) != 0 {
		t.Fatalf("ForPod(other/web-0) = %+v, want none", got)
	}
}
