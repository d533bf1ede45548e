package kubeenv

import (
	"context"
	"errors"
	"net"
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
		{Options{Dir: "x", ServiceCIDR: "198.19.200.0/24,198.19.201.0/24"}, "Options.ServiceCIDR"},
		{Options{Dir: "x", ServiceCIDR: "198.19.200.0/24,fd00:19:200::/112,fd00:19:201::/112"}, "Options.ServiceCIDR"},
	} {
		_, err := c.opts.withDefaults()
		if err == nil || !strings.Contains(err.Error(), c.field) {
			t.Errorf("%+v: error %v, want one naming %s", c.opts, err, c.field)
		}
	}
}

func TestServiceCIDRsOfBothFamilies(t *testing.T) {
	got, err := ServiceCIDRs("198.19.200.0/24,fd00:19:200::/112")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].String() != "198.19.200.0/24" || got[1].String() != "fd00:19:200::/112" {
		t.Fatalf("ServiceCIDRs: %v", got)
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

// TestAPIServerStartsAgainWhenItsPortWasTaken hands etcd a client port
// another process already listens on, as when a parallel test takes it
// between the pick and the bind: StartAPIServer must start etcd and the
// API server again on fresh ports. With every port pinned by the caller it
// must instead fail, saying the port was taken.
func TestAPIServerStartsAgainWhenItsPortWasTaken(t *testing.T) {
	bins := BinariesIn(CacheDir())
	if err := bins.Missing(); err != nil {
		if os.Getenv("SANDBOXIPAM_E2E_KUBERNETES") == "" {
			testsupport.SkipOrFail(t, "%v", err)
		}
		t.Fatal(err)
	}
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	takenPort := taken.Addr().(*net.TCPAddr).Port
	picks := 0
	pick := func(addr string) (int, error) {
		picks++
		if picks == 1 {
			return takenPort, nil
		}
		return freePort(addr)
	}
	ctx := context.Background()
	a, err := StartAPIServer(ctx, Options{Binaries: bins, Dir: t.TempDir(), Logf: t.Logf, pickPort: pick})
	if err != nil {
		t.Fatalf("StartAPIServer after a taken port: %v", err)
	}
	t.Cleanup(a.Stop)
	if a.opts.EtcdPort == takenPort {
		t.Fatalf("etcd still on the taken port %d", takenPort)
	}
	// 3 ports for the first attempt, 3 for the second.
	if picks != 6 {
		t.Fatalf("%d ports picked, want 6 (two attempts of three)", picks)
	}
	if err := a.Ready(ctx); err != nil {
		t.Fatal(err)
	}

	_, err = StartAPIServer(ctx, Options{Binaries: bins, Dir: t.TempDir(), EtcdPort: takenPort, EtcdPeerPort: takenPort + 1, APIPort: takenPort + 2})
	if !errors.Is(err, errPortTaken) {
		t.Fatalf("pinned taken port: error %v, want errPortTaken", err)
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
