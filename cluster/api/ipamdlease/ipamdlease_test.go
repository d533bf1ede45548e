package ipamdlease_test

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/sandboxipam/sandboxipam/cluster/api/ipamdlease"
	"github.com/sandboxipam/sandboxipam/cluster/api/v1alpha1"
)

// An ipamd Lease's name is a valid object name for every node name, and
// two node names never share one, however long.
func TestIpamdLeaseName(t *testing.T) {
	if got := ipamdlease.IpamdLeaseName("node-1"); got != "sandboxipam-ipamd-node-1" {
		t.Fatalf("IpamdLeaseName(node-1) = %q", got)
	}
	long := strings.Repeat("a", 240) + "."
	a, b := ipamdlease.IpamdLeaseName(long+"x"), ipamdlease.IpamdLeaseName(long+"y")
	for _, n := range []string{a, b} {
		if errs := validation.IsDNS1123Subdomain(n); len(errs) > 0 || !strings.HasPrefix(n, ipamdlease.IpamdLeasePrefix) {
			t.Errorf("%q: %v", n, errs)
		}
	}
	if a == b {
		t.Fatalf("two long node names share the Lease %q", a)
	}
}

// The annotation lives in the API's group (spelled out above so the leaf
// imports nothing).
func TestLeaseAnnotationInTheAPIGroup(t *testing.T) {
	if want := v1alpha1.Group + "/node-uid"; ipamdlease.LeaseNodeUIDAnnotation != want {
		t.Fatalf("LeaseNodeUIDAnnotation = %q, want %q", ipamdlease.LeaseNodeUIDAnnotation, want)
	}
}
