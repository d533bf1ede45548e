package validname

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"
)

// The test files alone import apimachinery: package config's fuzz build
// compiles validname, not its tests.

func TestDNSSubdomainMatchesTheLibrary(t *testing.T) {
	for _, name := range []string{
		"default", "pool-a", "a.b.c", "0", "a", strings.Repeat("a", 253), strings.Repeat("a", 254),
		"", "Default", "-a", "a-", "a..b", ".a", "a.", "a_b", "a b", "pool/x", "é",
	} {
		want := len(validation.IsDNS1123Subdomain(name)) == 0
		if got := DNSSubdomain(name) == nil; got != want {
			t.Errorf("DNSSubdomain(%q) accepts = %v, apimachinery accepts = %v", name, got, want)
		}
	}
}

func TestDNSLabelMatchesTheLibrary(t *testing.T) {
	for _, name := range []string{
		"kube-system", "sandboxipam", "a", "0", strings.Repeat("a", 63), strings.Repeat("a", 64),
		"", "Kube", "-a", "a-", "a.b", "a_b", "a b", "é",
	} {
		want := len(validation.IsDNS1123Label(name)) == 0
		if got := DNSLabel(name) == nil; got != want {
			t.Errorf("DNSLabel(%q) accepts = %v, apimachinery accepts = %v", name, got, want)
		}
	}
}

// FuzzDNSSubdomain holds the copy to the library: both accept exactly the
// same names.
func FuzzDNSSubdomain(f *testing.F) {
	for _, seed := range []string{"default", "", "a..b", "A", "a-", strings.Repeat("b", 254)} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, name string) {
		want := len(validation.IsDNS1123Subdomain(name)) == 0
		if got := DNSSubdomain(name) == nil; got != want {
			t.Errorf("DNSSubdomain(%q) accepts = %v, apimachinery accepts = %v", name, got, want)
		}
	})
}
