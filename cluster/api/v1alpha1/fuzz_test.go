package v1alpha1

import (
	"errors"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"
)

// FuzzParseBlockName: whatever the name, ParseBlockName either refuses it
// with ErrBadBlockName or returns a masked prefix whose canonical name is
// the input, a valid object name.
func FuzzParseBlockName(f *testing.F) {
	for _, s := range []string{"198.18.0.64-26", "fd00-0-0-0-0-0-0-40-122", "0-0-0-0-0-0-0-0-0", "198.18.0.1-26", "fd00--40-122", "::1-128", "1.2.3.4-32-1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		p, err := ParseBlockName(name)
		if err != nil {
			if !errors.Is(err, ErrBadBlockName) {
				t.Fatalf("ParseBlockName(%q) = %v, not ErrBadBlockName", name, err)
			}
			return
		}
		if p != p.Masked() || BlockName(p) != name {
			t.Fatalf("ParseBlockName(%q) = %s, whose name is %q", name, p, BlockName(p))
		}
		if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
			t.Fatalf("accepted %q, not an object name: %v", name, errs)
		}
	})
}
