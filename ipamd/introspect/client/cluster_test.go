package client_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/sandboxipam/sandboxipam/ipamd/introspect/client"
	"github.com/sandboxipam/sandboxipam/ipamd/introspect/schema"
)

// A retiring range is shown as such with its held addresses, never as
// free; an empty pool says what it waits for.
func TestPoolTableShowsRetiringAndWaiting(t *testing.T) {
	pool := schema.Pool{Source: "node", Ranges: []schema.Range{
		{Prefix: "198.18.1.0/29", Family: "ipv4", Group: "node", First: "198.18.1.1", Last: "198.18.1.6", Size: 6, Assigned: 1, Retiring: true},
		{Prefix: "198.18.2.0/29", Family: "ipv4", Group: "node", First: "198.18.2.1", Last: "198.18.2.6", Size: 6, Free: 6},
	}}
	var out bytes.Buffer
	if err := client.RenderPool(&out, pool); err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{
		"198.18.1.0/29  ipv4    node   198.18.1.1  198.18.1.6  6     1         0        retiring",
		"RETIRING 198.18.1.0/29: no longer this node's range; nothing is handed out of it, and it leaves once its 1 held address(es) are released",
	} {
		if !strings.Contains(out.String(), line) {
			t.Errorf("pool table lacks %q:\n%s", line, out.String())
		}
	}
	out.Reset()
	if err := client.RenderPool(&out, schema.Pool{Source: "node", Waiting: "Node node-1's spec.podCIDRs"}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "WAITING: the pool has no range yet; no address is handed out until Node node-1's spec.podCIDRs") {
		t.Errorf("waiting pool:\n%s", out.String())
	}
}

func TestRoutesTable(t *testing.T) {
	r := schema.Routes{Node: "node-a", Protocol: 201,
		Routes:  []schema.NodeRoute{{Node: "node-b", Dst: "198.18.101.0/24", Via: "198.18.10.2", Dev: "eth0"}},
		Skipped: []schema.SkippedRoute{{Node: "node-c", Dst: "198.18.102.0/24", Reason: "Node node-c's InternalIP 198.19.5.5 is not on a directly connected subnet"}}}
	var out bytes.Buffer
	if err := client.RenderRoutes(&out, r); err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{
		"node-b  198.18.101.0/24  198.18.10.2  eth0",
		"node-c        198.18.102.0/24  Node node-c's InternalIP 198.19.5.5 is not on a directly connected subnet",
		"protocol:  201",
	} {
		if !strings.Contains(out.String(), line) {
			t.Errorf("routes table lacks %q:\n%s", line, out.String())
		}
	}
}
