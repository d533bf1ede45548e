package client_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestClientLinksNoKubernetesClient keeps the introspection client light:
// ipamd's node side and the CNI path's neighbours link it, so rendering
// `ipamctl check --cluster` (which needs client-go's types) lives with
// ipamctl, never here.
func TestClientLinksNoKubernetesClient(t *testing.T) {
	const pkg = "github.com/sandboxipam/sandboxipam/ipamd/introspect/client"
	out, err := exec.Command("go", "list", "-deps", pkg).CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps %s: %v\n%s", pkg, err, out)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 10 {
		t.Fatalf("go list -deps %s listed %d packages, want its whole dependency graph:\n%s", pkg, len(deps), out)
	}
	for _, banned := range []string{"k8s.io/client-go/", "github.com/sandboxipam/sandboxipam/cluster/"} {
		for _, dep := range deps {
			if strings.HasPrefix(dep+"/", banned) {
				t.Errorf("%s depends on %s (under %s)", pkg, dep, banned)
			}
		}
	}
}
