package v1alpha1

import (
	"errors"
	"net/netip"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func testPool(name string, v4 []string, v4bits int, v6 ...string) IPPool {
	p := IPPool{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: IPPoolSpec{IPv4: &PoolFamily{CIDRs: v4, BlockSize: v4bits}}}
	if len(v6) > 0 {
		p.Spec.IPv6 = &PoolFamily{CIDRs: v6}
	}
	return p
}

func TestCheckBlock(t *testing.T) {
	pools := map[string]IPPool{"default": testPool("default", []string{"198.18.0.0/24"}, 26, "fd00:10::/120")}
	for cidr, ok := range map[string]bool{
		"198.18.0.64/26": true, "fd00:10::40/122": true,
		"0.0.0.0/1": false, "198.18.0.0/24": false, "198.18.0.0/27": false, "198.18.1.0/26": false, "fd00:11::/122": false,
	} {
		b := NewBlock("default", netip.MustParsePrefix(cidr), "n", "u", metav1Now())
		if err := CheckBlock(b, pools); (err == nil) != ok || (err != nil && !errors.Is(err, ErrNotABlockOfAPool)) {
			t.Errorf("CheckBlock(%s) = %v, want ok %v", cidr, err, ok)
		}
	}
	b := NewBlock("gone", netip.MustParsePrefix("198.18.0.64/26"), "n", "u", metav1Now())
	if err := CheckBlock(b, pools); !errors.Is(err, ErrNotABlockOfAPool) {
		t.Errorf("a block of a missing pool: %v", err)
	}
}

func TestOverlaps(t *testing.T) {
	pools := []IPPool{
		testPool("second", []string{"198.18.0.0/24"}, 25),
		testPool("default", []string{"198.18.0.0/26", "198.18.1.0/26"}, 26),
		testPool("apart", []string{"198.19.0.0/24"}, 26),
	}
	got := Overlaps(pools)
	want := []Overlap{{Pool: "default", CIDR: "198.18.0.0/26", Other: "second", OtherCIDR: "198.18.0.0/24"}}
	if !slices.Equal(got, want) {
		t.Fatalf("Overlaps = %+v, want %+v", got, want)
	}
	o := Overlapping("second", pools)
	if len(o) != 1 || o[netip.MustParsePrefix("198.18.0.0/24")].Other != "default" {
		t.Errorf("Overlapping(second) = %+v", o)
	}
	if o := Overlapping("apart", pools); len(o) != 0 {
		t.Errorf("Overlapping(apart) = %+v, want none", o)
	}
}
