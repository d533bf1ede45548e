package v1alpha1_test

import (
	"context"
	"net/netip"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/sandboxipam/sandboxipam/cluster/api/v1alpha1"
)

// checkGeometry is the part of TestCRDsOnARealAPIServer that keeps pool
// geometry from changing under claimed blocks (issue 37): a pool's block
// size is fixed once set (the 26 -> 24 patch that made overlapping
// blocks), and an IPBlock's name must be its CIDR's canonical name, IPv4
// and IPv6 (issue 44, path 9), so no block has two names.
func checkGeometry(t *testing.T, ctx context.Context, dyn dynamic.Interface) {
	t.Helper()
	pools := dyn.Resource(v1alpha1.IPPoolResource)
	create(t, ctx, pools.Create, pool("fixed", `{"ipv4":{"cidrs":["198.18.0.0/24"],"blockSize":26},"ipv6":{"cidrs":["fd00:2::/112"]}}`))
	for _, patch := range []string{
		`{"spec":{"ipv4":{"blockSize":24}}}`,
		`{"spec":{"ipv6":{"blockSize":120}}}`,
	} {
		_, err := pools.Patch(ctx, "fixed", types.MergePatchType, []byte(patch), metav1.PatchOptions{})
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "the block size is fixed once set") {
			t.Errorf("patch %s: %v, want Invalid: the block size is fixed once set", patch, err)
		}
	}
	// Adding a CIDR keeps the size: allowed.
	if _, err := pools.Patch(ctx, "fixed", types.MergePatchType, []byte(`{"spec":{"ipv4":{"cidrs":["198.18.0.0/24","198.18.1.0/24"],"blockSize":26}}}`), metav1.PatchOptions{}); err != nil {
		t.Errorf("adding a CIDR at the same block size: %v", err)
	}

	blocks := dyn.Resource(v1alpha1.IPBlockResource)
	for _, tc := range []struct {
		cidr, name string
		ok         bool
	}{
		{"198.18.2.64/26", "198.18.2.64-26", true},
		{"198.18.2.128/26", "198.18.2.0-26", false},
		{"198.18.2.192/26", "198.18.2.192-27", false},
		{"0.0.0.0/1", "198.18.3.0-26", false},
		{"fd00:3::40/122", "fd00-3-0-0-0-0-0-40-122", true},
		{"fd00:3::80/122", "fd00-3-0-0-0-0-0-0080-122", false},
		{"fd00:3::c0/122", "fd00-3--c0-122", false},
		// A canonically spelt name of another block (issue 44, path 9:
		// the CRD compares the name's address with spec.cidr's).
		{"fd00:3::100/122", "fd00-3-0-0-0-0-0-140-122", false},
		{"fd00:18::40/122", "fd00-18-0-0-0-0-0-0-122", false},
		{"fd00:3::140/122", "fd00-3-0-0-0-0-0-140-121", false},
		{"fd00:3::140/122", "fd00-3-0-0-0-0-0-140-0122", false},
		{"fd00:3::140/122", "fd00-3-0-0-0-0-0-140-122", true},
		{"fd00:3::/64", "fd00-3-0-0-0-0-0-0-64", true},
	} {
		b := v1alpha1.NewBlock("fixed", netip.MustParsePrefix(tc.cidr), "node-1", "uid-1", metav1.NewTime(time.Now()))
		b.Name = tc.name
		u, err := v1alpha1.ToUnstructured(&b)
		if err != nil {
			t.Fatal(err)
		}
		got, err := blocks.Create(ctx, u, metav1.CreateOptions{})
		if err == nil {
			if _, decodeErr := v1alpha1.BlockFrom(got); (decodeErr == nil) != (tc.name == v1alpha1.BlockName(netip.MustParsePrefix(tc.cidr))) {
				t.Errorf("IPBlock %s of %s: BlockFrom = %v, want an error exactly when the name is not the CIDR's", tc.name, tc.cidr, decodeErr)
			}
		}
		switch {
		case tc.ok && err != nil:
			t.Errorf("IPBlock %s of %s: %v, want created", tc.name, tc.cidr, err)
		case !tc.ok && (!apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "the name must be the canonical name of spec.cidr")):
			t.Errorf("IPBlock %s of %s: %v, want Invalid: the name must be the canonical name", tc.name, tc.cidr, err)
		}
	}
}
