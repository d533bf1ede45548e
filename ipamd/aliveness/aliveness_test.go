package aliveness_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/netip"
	"strings"
	"testing"

	"github.com/sandboxipam/sandboxipam/cluster/api/ipamdlease"
	"github.com/sandboxipam/sandboxipam/ipamd/aliveness"
)

// The answer on a real listener: GET says the node, its UID and its
// blocks; nothing else is served; once stopped, the address refuses.
func TestServerAnswersAndOnlyReads(t *testing.T) {
	answer := ipamdlease.Alive{Node: "node-1", NodeUID: "uid-1", Blocks: []string{"198.18.0.0/26"}}
	s, err := aliveness.Listen([]netip.AddrPort{netip.MustParseAddrPort("127.0.0.1:0")}, func() ipamdlease.Alive { return answer }, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { s.Serve(ctx); close(done) }()
	url := "http://" + s.Addresses()[0].String() + ipamdlease.AlivePath
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	var got ipamdlease.Alive
	if err := json.NewDecoder(resp.Body).Decode(&got); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %v", url, resp.StatusCode, err)
	}
	resp.Body.Close()
	if got.Node != "node-1" || got.NodeUID != "uid-1" || len(got.Blocks) != 1 || got.Blocks[0] != "198.18.0.0/26" {
		t.Fatalf("answer %+v", got)
	}
	for method, path := range map[string]string{http.MethodPost: ipamdlease.AlivePath, http.MethodGet: "/v1/release"} {
		req, _ := http.NewRequest(method, "http://"+s.Addresses()[0].String()+path, strings.NewReader("{}"))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusMethodNotAllowed && resp.StatusCode != http.StatusNotFound {
			t.Errorf("%s %s: %d, want 405 or 404", method, path, resp.StatusCode)
		}
	}
	cancel()
	<-done
	if _, err := http.Get(url); err == nil || !strings.Contains(err.Error(), "connection refused") {
		t.Fatalf("GET after stop: %v, want connection refused", err)
	}
}

// An address that cannot be bound fails Listen, naming it, and binds
// nothing else.
func TestListenNamesTheAddress(t *testing.T) {
	s, err := aliveness.Listen([]netip.AddrPort{netip.MustParseAddrPort("127.0.0.1:0")}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	taken := s.Addresses()[0]
	if _, err := aliveness.Listen([]netip.AddrPort{netip.MustParseAddrPort("127.0.0.1:0"), taken}, nil, nil); err == nil ||
		!strings.Contains(err.Error(), "alive: listen on "+taken.String()) {
		t.Fatalf("Listen on a taken address: %v", err)
	}
}
