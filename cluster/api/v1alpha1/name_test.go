package v1alpha1

import (
	"errors"
	"net/netip"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"
)

func TestBlockNameRoundTrip(t *testing.T) {
	for _, tc := range []struct{ cidr, name string }{
		{"198.18.0.0/26", "198.18.0.0-26"},
		{"198.18.0.64/26", "198.18.0.64-26"},
		{"198.18.0.77/26", "198.18.0.64-26"}, // masked
		{"198.19.255.255/32", "198.19.255.255-32"},
		{"fd00::40/122", "fd00-0-0-0-0-0-0-40-122"},
		{"fd00:0abc::/64", "fd00-abc-0-0-0-0-0-0-64"},
		{"::/0", "0-0-0-0-0-0-0-0-0"},
	} {
		p := netip.MustParsePrefix(tc.cidr)
		got := BlockName(p)
		if got != tc.name {
			t.Errorf("BlockName(%s) = %q, want %q", tc.cidr, got, tc.name)
		}
		if errs := validation.IsDNS1123Subdomain(got); len(errs) > 0 {
			t.Errorf("BlockName(%s) = %q is not a valid object name: %v", tc.cidr, got, errs)
		}
		back, err := ParseBlockName(got)
		if err != nil || back != p.Masked() {
			t.Errorf("ParseBlockName(%q) = %v, %v; want %v", got, back, err, p.Masked())
		}
	}
}

func TestParseBlockNameRejectsNonCanonical(t *testing.T) {
	for _, name := range []string{
		"", "198.18.0.0", "198.18.0.1-26", "198.18.0.0-33", "198.18.0.0-x",
		"fd00-0-0-0-0-0-0-0040-122", "FD00-0-0-0-0-0-0-40-122", "fd00--40-122",
		"fd00-0-0-0-0-0-0-41-122", "fd00-0-0-0-0-0-0-40-129", "198.18.0.0--26",
	} {
		if p, err := ParseBlockName(name); !errors.Is(err, ErrBadBlockName) {
			t.Errorf("ParseBlockName(%q) = %v, %v; want ErrBadBlockName", name, p, err)
		}
	}
}

func TestBlockFromChecksNameAgainstCIDR(t *testing.T) {
	b := NewBlock("default", netip.MustParsePrefix("198.18.1.0/26"), "node-1", "uid-1", metav1Now())
	u, err := ToUnstructured(&b)
	if err != nil {
		t.Fatal(err)
	}
	got, err := BlockFrom(u)
	if err != nil || got.Spec.CIDR != "198.18.1.0/26" || got.Name != "198.18.1.0-26" || got.Spec.NodeUID != "uid-1" {
		t.Fatalf("BlockFrom = %+v, %v", got, err)
	}
	u.SetName("198.18.2.0-26")
	if _, err := BlockFrom(u); err == nil {
		t.Fatal("BlockFrom accepted a name that is not its CIDR's")
	}
}
