package daemon_test

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/sandboxipam/sandboxipam/internal/testsupport"
	"github.com/sandboxipam/sandboxipam/ipamd/api/hostveth"
	"github.com/sandboxipam/sandboxipam/ipamd/api/wire"
	"github.com/sandboxipam/sandboxipam/ipamd/datastore"
	"github.com/sandboxipam/sandboxipam/ipamd/introspect/client"
	"github.com/sandboxipam/sandboxipam/ipamd/introspect/schema"
)

func releaseReq(id string, force bool) schema.ReleaseRequest {
	return schema.ReleaseRequest{Network: testNetwork, SandboxID: id, IfName: "eth0", Force: force}
}

// wantRefused checks a release was refused with 409 naming each piece of
// evidence.
func wantRefused(t *testing.T, err error, evidence ...string) {
	t.Helper()
	var apiErr *client.APIError
	if !errors.As(err, &apiErr) || apiErr.Status != http.StatusConflict {
		t.Fatalf("release = %v; want 409 refused", err)
	}
	for _, e := range evidence {
		if !strings.Contains(apiErr.Message, e) {
			t.Errorf("refusal %q does not name %q", apiErr.Message, e)
		}
	}
}

func quarantined(t *testing.T, admin *client.Client) uint64 {
	t.Helper()
	pool, err := admin.Pool(t.Context())
	if err != nil || len(pool.Families) != 1 {
		t.Fatalf("pool = %+v, %v", pool, err)
	}
	return pool.Families[0].Quarantined
}

// fill ADDs pods until the pool is exhausted and returns the addresses
// they got.
func fill(t *testing.T, n *node, cni cniClient, prefix string) []string {
	t.Helper()
	var got []string
	for i := range 20 {
		id := fmt.Sprintf("%s-%02d", prefix, i)
		n.addSandbox(id)
		ip, err := cni.add(t.Context(), id)
		var werr *wire.Error
		if errors.As(err, &werr) && werr.Code == wire.CodeResourceExhausted {
			return got
		}
		if err != nil {
			t.Fatalf("ADD %s: %v", id, err)
		}
		got = append(got, ip)
	}
	t.Fatal("the pool never ran out")
	return nil
}

// An operator's release of a sandbox the runtime lists, reporting its
// address, is refused naming that evidence; --force releases it, logs it
// at WARN with the caller's uid, counts it, and quarantines the address
// until the runtime stops reporting it. A release the evidence does not
// contradict is served without --force.
func TestReleaseOfALiveSandboxNeedsForce(t *testing.T) {
	n := newNode(t, "198.18.0.0/28")
	d, cni, admin, logs := startLogged(t, n)
	waitReady(t, cni)
	n.addSandbox("live")
	if ip, err := cni.add(t.Context(), "live"); err != nil || ip != "198.18.0.1/28" {
		t.Fatalf("ADD live = %q, %v", ip, err)
	}
	n.setSandboxIP("live", "198.18.0.1")
	n.addSandbox("gone")
	if ip, err := cni.add(t.Context(), "gone"); err != nil || ip != "198.18.0.2/28" {
		t.Fatalf("ADD gone = %q, %v", ip, err)
	}
	n.removeSandbox("gone")

	_, err := admin.Release(t.Context(), releaseReq("live", false))
	wantRefused(t, err, "shows sandbox live (pod default/pod-live, Ready)", "the runtime reports 198.18.0.1 for sandbox live")
	if _, ok := d.Store().Lookup(datastore.Key{Network: testNetwork, SandboxID: "live", IfName: "eth0"}); !ok {
		t.Fatal("a refused release released")
	}

	plain, err := admin.Release(t.Context(), releaseReq("gone", false))
	if err != nil || plain.Forced || plain.Released.IP != "198.18.0.2" || len(plain.Quarantined) != 0 {
		t.Fatalf("release of a sandbox nothing shows = %+v, %v", plain, err)
	}

	forced, err := admin.Release(t.Context(), releaseReq("live", true))
	if err != nil || !forced.Forced || forced.Released.SandboxID != "live" || !slices.Equal(forced.Released.IPs, []string{"198.18.0.1"}) ||
		!slices.Equal(forced.Quarantined, []string{"198.18.0.1"}) || len(forced.Evidence) != 2 {
		t.Fatalf("forced release = %+v, %v", forced, err)
	}
	if m := scrape(t, d.IntrospectionAddr().String()); !strings.Contains(m, "\nipamd_operator_forced_releases_total 1\n") ||
		!strings.Contains(m, `ipamd_released_addresses_total{reason="operator"} 2`) {
		t.Errorf("metrics lack one forced and two operator releases:\n%s", grepLines(m, "operator"))
	}
	uid := fmt.Sprintf("caller_uid=%d", os.Geteuid())
	if got := logs.lines("level=WARN", "FORCED RELEASE", uid, "198.18.0.1"); len(got) != 1 {
		t.Errorf("forced release WARN lines with %s: %q", uid, logs.lines("FORCED"))
	}
	quarantineLastsWhileReported(t, n, cni, admin)
}

// quarantineLastsWhileReported: 198.18.0.1, released by force while the
// runtime reports it for sandbox live, stays quarantined through a pass
// and a full pool, and is handed out again once the runtime drops live.
func quarantineLastsWhileReported(t *testing.T, n *node, cni cniClient, admin *client.Client) {
	t.Helper()
	if _, err := admin.Reconcile(t.Context(), false); err != nil {
		t.Fatal(err)
	}
	if q := quarantined(t, admin); q != 1 {
		t.Fatalf("quarantined after a pass that still lists it = %d, want 1", q)
	}
	if got := fill(t, n, cni, "fill"); len(got) != 13 || slices.Contains(got, "198.18.0.1/28") {
		t.Fatalf("ADDs while quarantined got %v; want 13 others", got)
	}
	// The pod is gone at last: the next pass lifts the quarantine.
	n.removeSandbox("live")
	if _, err := admin.Reconcile(t.Context(), false); err != nil {
		t.Fatal(err)
	}
	if q := quarantined(t, admin); q != 0 {
		t.Fatalf("quarantined after the runtime stopped reporting it = %d, want 0", q)
	}
	n.addSandbox("after")
	if ip, err := cni.add(t.Context(), "after"); err != nil || ip != "198.18.0.1/28" {
		t.Fatalf("ADD after the quarantine = %q, %v; want 198.18.0.1/28", ip, err)
	}
}

// The node's own evidence: a pod the runtime no longer lists (the adapter
// is blind to it) but whose pod link and host route the CNI plugin made,
// and network namespace, are still on the node is refused, naming the
// link, the route and the namespace; forced,
// its address is quarantined while the node shows it.
func TestReleaseRefusedWhileTheNodeShowsThePod(t *testing.T) {
	testsupport.RequireRoot(t, "ip")
	n := newNode(t, "198.18.0.0/28")
	p := &plugNode{node: n, hostNS: newNetns(t, "h"), plugin: buildPlugin(t), pods: map[string]string{}}
	n.cfg.PodLinks.NetNS = "/run/netns/" + p.hostNS
	d, cni, admin, _ := startLogged(t, n)
	waitReady(t, cni)
	id := p.runPod(t, "node-evidence")
	n.removeSandbox(id)
	veth := hostveth.Name("sbx", id, "eth0")

	_, err := admin.Release(t.Context(), releaseReq(id, false))
	wantRefused(t, err, "the node still has its pod link "+veth, "the node routes 198.18.0.1 to pod link "+veth,
		"its network namespace /run/netns/"+p.pods[id]+" is on the node")
	forced, err := admin.Release(t.Context(), releaseReq(id, true))
	if err != nil || !slices.Equal(forced.Quarantined, []string{"198.18.0.1"}) {
		t.Fatalf("forced release = %+v, %v", forced, err)
	}
	if _, err := admin.Reconcile(t.Context(), false); err != nil {
		t.Fatal(err)
	}
	if q := quarantined(t, admin); q != 1 {
		t.Fatalf("quarantined while the node routes it = %d, want 1", q)
	}
	if _, ok := d.Store().Lookup(datastore.Key{Network: testNetwork, SandboxID: id, IfName: "eth0"}); ok {
		t.Fatal("the forced release left the assignment")
	}
}
