package kubeenv

import (
	"context"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/sandboxipam/sandboxipam/internal/testsupport"
)

func TestOptionsNameTheBadField(t *testing.T) {
	for _, c := range []struct {
		opts  Options
		field string
	}{
		{Options{}, "Options.Dir"},
		{Options{Dir: "x", Address: "nope"}, "Options.Address"},
		{Options{Dir: "x", ServiceCIDR: "10.0.0.0"}, "Options.ServiceCIDR"},
	} {
		_, err := c.opts.withDefaults()
		if err == nil || !strings.Contains(err.Error(), c.field) {
			t.Errorf("%+v: error %v, want one naming %s", c.opts, err, c.field)
		}
	}
}

func TestDefaultsInANamespaceAreTheWellKnownPorts(t *testing.T) {
	o, err := Options{Dir: "x", NetNS: "/run/netns/x"}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	if o.EtcdPort != 2379 || o.EtcdPeerPort != 2380 || o.APIPort != 6443 || o.Address != "127.0.0.1" || o.ServiceCIDR != DefaultServiceCIDR {
		t.Fatalf("defaults %+v", o)
	}
}

// TestAPIServerServesNodes starts etcd and kube-apiserver in the test's
// own network namespace, on free ports, creates a Node and reads it back,
// and again after the API server alone was stopped and started again.
func TestAPIServerServesNodes(t *testing.T) {
	bins := BinariesIn(CacheDir())
	if err := bins.Missing(); err != nil {
		if os.Getenv("SANDBOXIPAM_E2E_KUBERNETES") == "" {
			testsupport.SkipOrFail(t, "%v", err)
		}
		t.Fatal(err)
	}
	ctx := context.Background()
	a, err := StartAPIServer(ctx, Options{Binaries: bins, Dir: t.TempDir(), Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.Stop)
	if err := a.Ready(ctx); err != nil {
		t.Fatal(err)
	}
	kc, err := os.ReadFile(a.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(kc), "server: "+a.URL+"\n") {
		t.Fatalf("kubeconfig names another server than %s:\n%s", a.URL, kc)
	}
	body := `{"apiVersion":"v1","kind":"Node","metadata":{"name":"n1"},"spec":{"podCIDRs":["198.18.4.0/24"]}}`
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, a.URL+"/api/v1/nodes", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+a.Token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := a.HTTPClient().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("create node: %s", resp.Status)
	}
	code, got, err := get(ctx, a.HTTPClient(), a.URL+"/api/v1/nodes/n1", a.Token)
	if err != nil || code != http.StatusOK || !strings.Contains(got, `"198.18.4.0/24"`) {
		t.Fatalf("get node: %d %v: %s", code, err, got)
	}
	// The API server alone stops and starts again; etcd kept the Node.
	if err := a.StopAPIServer(); err != nil {
		t.Fatal(err)
	}
	if err := a.Ready(ctx); err == nil {
		t.Fatal("the API server answers /readyz after StopAPIServer")
	}
	if err := a.RestartAPIServer(ctx); err != nil {
		t.Fatal(err)
	}
	code, got, err = get(ctx, a.HTTPClient(), a.URL+"/api/v1/nodes/n1", a.Token)
	if err != nil || code != http.StatusOK || !strings.Contains(got, `"198.18.4.0/24"`) {
		t.Fatalf("get node after the restart: %d %v: %s", code, err, got)
	}
	a.Stop()
	for _, p := range a.Processes() {
		if p.Alive() == nil {
			t.Errorf("%s runs on after Stop", p.Name)
		}
	}
}
