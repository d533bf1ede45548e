package checkpoint_test

import (
	"strings"
	"testing"

	"github.com/sandboxipam/sandboxipam/ipamd/checkpoint"
)

// The pod's network namespace is optional: an assignment without one is
// written without the keys (a file an older build reads as it always
// did), and a file written before the field loads with none.
func TestNetNSIsOptional(t *testing.T) {
	f := sample()
	ns := f.Assignments[0]
	if ns.NetNS == "" || ns.NetNSDev == 0 || ns.NetNSIno == 0 {
		t.Fatalf("the sample's first assignment has no namespace: %+v", ns)
	}
	data, err := checkpoint.Encode(f)
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{`"netns":"/var/run/netns/cni-5d3a0c1e-7f0b-6a2e-b1c4-2d9e8f7a6b5c"`, `"netnsDev":4`, `"netnsIno":4026532173`} {
		if strings.Count(string(data), key) != 1 {
			t.Errorf("the checkpoint holds %q %d times, want once:\n%s", key, strings.Count(string(data), key), data)
		}
	}
	f.Assignments[0].NetNS, f.Assignments[0].NetNSDev, f.Assignments[0].NetNSIno = "", 0, 0
	older, err := checkpoint.Encode(f)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(older), `"netns`) {
		t.Fatalf("a checkpoint without namespaces names one:\n%s", older)
	}
	got, err := checkpoint.Decode(older)
	if err != nil {
		t.Fatal(err)
	}
	if a := got.Assignments[0]; a.NetNS != "" || a.NetNSDev != 0 || a.NetNSIno != 0 || a.SandboxID != ns.SandboxID {
		t.Fatalf("decoded %+v; want %s with no namespace", a, ns.SandboxID)
	}
}
