package podcidr

import (
	"net/netip"
	"path/filepath"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sandboxipam/sandboxipam/ipamd/datastore"
)

// A Node's IPv6 podCIDR never gives a pod its first address, the
// subnet-router anycast address (RFC 4291 2.6.1); the IPv4 podCIDR
// never gives its network address. host-local skips both.
func TestPodCIDRSkipsTheSubnetRouterAnycastAddress(t *testing.T) {
	store, err := datastore.Open(t.Context(), datastore.Options{Path: filepath.Join(t.TempDir(), "ck")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close() })
	s, err := New(Config{NodeName: "node-1"}, nil, store, Options{})
	if err != nil {
		t.Fatal(err)
	}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1", UID: "uid-1"},
		Spec: corev1.NodeSpec{PodCIDRs: []string{"198.18.9.0/29", "fd00:77::/120"}}}
	if err := s.apply(t.Context(), nodeEvent{node: node}); err != nil {
		t.Fatal(err)
	}
	a, err := store.Assign(t.Context(), datastore.Key{Network: "pods", SandboxID: "first", IfName: "eth0"}, datastore.Pod{Name: "first"})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := a.IPs(), []netip.Addr{netip.MustParseAddr("198.18.9.1"), netip.MustParseAddr("fd00:77::1")}; !slices.Equal(got, want) {
		t.Fatalf("first pod got %v, want %v", got, want)
	}
	if st := store.Stats(); st.Total != 6+255 {
		t.Fatalf("pool of %d addresses, want 261 (6 of the /29, 255 of the /120)", st.Total)
	}
}
