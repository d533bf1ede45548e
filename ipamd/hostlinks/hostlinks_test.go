package hostlinks_test

import (
	"context"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	"github.com/sandboxipam/sandboxipam/internal/testsupport"
	"github.com/sandboxipam/sandboxipam/ipamd/api/hostveth"
	"github.com/sandboxipam/sandboxipam/ipamd/hostlinks"
)

// netns makes a network namespace for the test and returns its path.
func netns(t *testing.T, name string) string {
	t.Helper()
	testsupport.RequireRoot(t, "ip")
	run(t, "ip", "netns", "add", name)
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "delete", name).Run() })
	return filepath.Join("/run/netns", name)
}

func run(t *testing.T, argv ...string) {
	t.Helper()
	if out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput(); err != nil {
		t.Fatalf("%v: %v\n%s", argv, err, out)
	}
}

// A "host" namespace with two pod links as the CNI plugin makes them (a
// veth named after the sandbox, a /32 route through it) and one link of
// another prefix: the reader finds exactly the plugin's links and their
// routes, and the pod side's address from the pod's namespace.
func TestReadFindsThePluginsPodLinksAndRoutes(t *testing.T) {
	pid := strconv.Itoa(os.Getpid())
	host := netns(t, "sbxtest-host-"+pid)
	pod := netns(t, "sbxtest-pod-"+pid)
	hostNS, podNS := filepath.Base(host), filepath.Base(pod)
	a := hostveth.Name("sbx", "93e629d853d9f70464dd5b54987533ffe87930cb28a6414ddb48c94b69845e85", "eth0")
	b := hostveth.Name("sbx", "c32c237fb5293478da938e388f6e22486790facba0d178ff24271829865976cf", "eth0")
	run(t, "ip", "-n", hostNS, "link", "add", a, "type", "veth", "peer", "name", "eth0", "netns", podNS)
	run(t, "ip", "-n", hostNS, "link", "add", b, "type", "veth", "peer", "name", "pb")
	run(t, "ip", "-n", hostNS, "link", "add", "other0", "type", "veth", "peer", "name", "other1")
	for _, l := range []string{a, b, "other0"} {
		run(t, "ip", "-n", hostNS, "link", "set", l, "up")
	}
	run(t, "ip", "-n", hostNS, "route", "add", "198.18.0.7/32", "dev", a)
	run(t, "ip", "-n", hostNS, "route", "add", "198.18.0.9/32", "dev", "other0")
	run(t, "ip", "-n", podNS, "addr", "add", "198.18.0.7/32", "dev", "eth0")
	run(t, "ip", "-n", podNS, "link", "set", "eth0", "up")

	snap, err := hostlinks.Reader{Prefix: "sbx", NetNS: host}.Read(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.Links) != 2 || !slices.Equal(snap.Links[a], []netip.Addr{netip.MustParseAddr("198.18.0.7")}) {
		t.Fatalf("Links = %v, want %s -> 198.18.0.7 and %s -> none", snap.Links, a, b)
	}
	if routed, ok := snap.Links[b]; !ok || len(routed) != 0 {
		t.Fatalf("Links[%s] = %v, %v; want present, routing nothing", b, routed, ok)
	}
	addrs, err := hostlinks.NetNSAddrs(pod)
	if err != nil || !slices.Equal(addrs, []netip.Addr{netip.MustParseAddr("198.18.0.7")}) {
		t.Fatalf("NetNSAddrs = %v, %v; want 198.18.0.7", addrs, err)
	}
}
