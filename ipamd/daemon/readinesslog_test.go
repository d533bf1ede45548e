package daemon

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"github.com/sandboxipam/sandboxipam/ipamd/datastore"
)

// TestReadinessChangesAreLoggedOnce: each change of the readiness answer
// is logged once with every reason, and an answer asked again is not
// logged again (the kubelet asks every 2 s).
func TestReadinessChangesAreLoggedOnce(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
		if a.Key == slog.TimeKey {
			return slog.Attr{}
		}
		return a
	}}))
	var l readinessLog
	exhausted := datastore.Readiness{Reasons: []string{"address pool exhausted: no free ipv4 address", "no new address is handed out: fenced"}}
	for _, r := range []datastore.Readiness{
		exhausted, exhausted,
		{Free: 3}, {Free: 2},
		{Reasons: []string{"address pool exhausted"}},
	} {
		l.logChange(log, r)
	}
	want := []string{
		`level=WARN msg="not ready: an ADD for a new pod is refused" why="address pool exhausted: no free ipv4 address; no new address is handed out: fenced" free=0`,
		`level=INFO msg="ready: an ADD for a new pod gets an address" free=3`,
		`level=WARN msg="not ready: an ADD for a new pod is refused" why="address pool exhausted" free=0`,
	}
	if got := strings.Split(strings.TrimSpace(buf.String()), "\n"); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("logged:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
