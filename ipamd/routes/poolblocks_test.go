package routes

import (
	"net/netip"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sandboxipam/sandboxipam/cluster/api/v1alpha1"
)

// Only blocks of a known pool, inside its CIDRs at its block size, are
// routed (issue 37, item 3): 0.0.0.0/1 written with one node's token, a
// block of a pool that does not exist and a block of another size are
// skipped with their reasons.
func TestOnlyPoolBlocksAreRouted(t *testing.T) {
	pools := map[string]v1alpha1.IPPool{"default": {ObjectMeta: metav1.ObjectMeta{Name: "default"},
		Spec: v1alpha1.IPPoolSpec{IPv4: &v1alpha1.PoolFamily{CIDRs: []string{"198.18.0.0/24"}, BlockSize: 26},
			IPv6: &v1alpha1.PoolFamily{CIDRs: []string{"fd00:10::/120"}}}}}
	blk := func(pool, cidr string) v1alpha1.IPBlock {
		return v1alpha1.NewBlock(pool, netip.MustParsePrefix(cidr), "node-b", "uid-b", metav1.Now())
	}
	blocks := []v1alpha1.IPBlock{
		blk("default", "198.18.0.64/26"),
		blk("default", "fd00:10::40/122"),
		blk("default", "0.0.0.0/1"),
		blk("default", "198.18.0.0/24"),
		blk("default", "198.18.1.0/26"),
		blk("gone", "198.18.2.0/26"),
	}
	ok, bad := poolBlocks(blocks, pools)
	var names []string
	for _, b := range ok {
		names = append(names, b.Name)
	}
	if !slices.Equal(names, []string{"198.18.0.64-26", "fd00-10-0-0-0-0-0-40-122"}) {
		t.Errorf("routed %v, want the two blocks of the pool", names)
	}
	var reasons []string
	for _, s := range bad {
		reasons = append(reasons, s.Reason)
	}
	want := []string{
		"IPBlock 0.0.0.0-1: not a block of a known IPPool: 0.0.0.0/1 is not inside IPPool default's CIDRs at its block size",
		"IPBlock 198.18.0.0-24: not a block of a known IPPool: 198.18.0.0/24 is not inside IPPool default's CIDRs at its block size",
		"IPBlock 198.18.1.0-26: not a block of a known IPPool: 198.18.1.0/26 is not inside IPPool default's CIDRs at its block size",
		"IPBlock 198.18.2.0-26: not a block of a known IPPool: IPPool gone does not exist",
	}
	if !slices.Equal(reasons, want) {
		t.Errorf("skipped:\n got %q\nwant %q", reasons, want)
	}
}
