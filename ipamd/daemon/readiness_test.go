package daemon_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/sandboxipam/sandboxipam/internal/testsupport"
	"github.com/sandboxipam/sandboxipam/ipamd/daemon"
	"github.com/sandboxipam/sandboxipam/ipamd/introspect/client"
)

// TestStatusReadyzAndIpamctlGiveOneAnswer holds the three ways to ask
// "can ipamd hand out an address to a new pod now, and if not, why" (the
// CNI STATUS verb on the socket, /readyz, and the introspection client
// ipamctl ready uses) to one answer, reason by reason: unproven, fenced,
// exhausted, the socket closed. STATUS once said ready while every ADD was
// refused as fenced, and a test that waited on it raced the pool source's
// start fence (issue 47). The pool waiting for its first range is held in
// the datastore's test and the podCIDR source's.
func TestStatusReadyzAndIpamctlGiveOneAnswer(t *testing.T) {
	n := newNode(t, "198.18.0.0/30")
	n.setUnavailable(true) // no listing: the store stays unproven
	d, cni, _ := startInProcess(t, n)
	intro := client.New(d.IntrospectionAddr().String(), nil)
	const unproven = "the datastore is unproven (no trusted checkpoint): waiting for a successful runtime listing"
	wantAnswer(t, cni, intro, unproven)
	if _, err := cni.add(t.Context(), "sandbox-early"); err == nil || !strings.Contains(err.Error(), "unproven") {
		t.Fatalf("ADD while unproven = %v, want refused as unproven", err)
	}

	n.setUnavailable(false)
	waitReady(t, cni)
	wantAnswer(t, cni, intro, "")

	d.Store().SetFenced("ipamd's Lease was last renewed 2m10s ago")
	wantAnswer(t, cni, intro, "no new address is handed out: ipamd's Lease was last renewed 2m10s ago")
	if _, err := cni.add(t.Context(), "sandbox-fenced"); err == nil || !strings.Contains(err.Error(), "fenced") {
		t.Fatalf("ADD while fenced = %v, want refused as fenced", err)
	}
	d.Store().SetFenced("")
	wantAnswer(t, cni, intro, "")

	for _, id := range []string{"sandbox-0", "sandbox-1"} { // a /30 holds two
		n.addSandbox(id)
		if _, err := cni.add(t.Context(), id); err != nil {
			t.Fatalf("ADD %s: %v", id, err)
		}
	}
	wantAnswer(t, cni, intro, "address pool exhausted: no free ipv4 address")

	if err := daemon.StopSocketForTest(t.Context(), d); err != nil {
		t.Fatal(err)
	}
	closed := "the CNI socket " + n.cfg.Socket + " is not accepting connections"
	r, err := intro.Readiness(t.Context())
	if err != nil || r.Ready || !slices.Contains(r.Reasons, closed) {
		t.Fatalf("/readyz with the socket closed = %+v, %v; want not ready naming %q", r, err, closed)
	}
	if st, err := cni.status(t.Context()); err == nil {
		t.Fatalf("STATUS answered %v on a closed socket", st)
	}
}

// wantAnswer waits until STATUS and /readyz agree on every reason and
// both name exactly reason (or both say ready, for ""). The two are asked
// one after the other, so a change in between (the adapter's listing, in
// the background) may make one pair differ: the wait asks again. Answers
// from two owners that disagree (STATUS ready while fenced, as before
// issue 47) never agree, and the wait fails naming both.
func wantAnswer(t *testing.T, cni cniClient, intro *client.Client, reason string) {
	t.Helper()
	testsupport.Wait(t, fmt.Sprintf("STATUS and /readyz to name %q", reason), func() (bool, string) {
		st, err := cni.status(t.Context())
		if err != nil {
			return false, "STATUS: " + err.Error()
		}
		r, err := intro.Readiness(t.Context())
		if err != nil {
			return false, "/readyz: " + err.Error()
		}
		got := fmt.Sprintf("STATUS %v %q; /readyz %v %q", st.Ready, st.Message, r.Ready, r.Reasons)
		if st.Ready != r.Ready || st.Message != strings.Join(r.Reasons, "; ") {
			return false, "STATUS and /readyz disagree: " + got
		}
		if reason == "" {
			return st.Ready, got
		}
		return len(r.Reasons) == 1 && strings.HasPrefix(r.Reasons[0], reason), got
	})
}
