package testsupport

import (
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// testSupport matches the project's packages that exist for tests: the
// environments that start runtimes and control planes, the cluster
// fixture, the scenario, the ipamd process, the fake EC2, the test
// adapter, and every package
// named *test (adaptertest, conformancetest, ...).
var testSupport = regexp.MustCompile(`^github\.com/sandboxipam/sandboxipam/(internal/(testsupport|testenv|kubeenv|clusterfixture|scenario|ipamdproc|awslocal|testadapter)(/|$)|.*test$)`)

// No command under cmd/ links a test-support package: a shipped binary
// carries nothing that starts private runtimes or fakes a cloud.
func TestNoCommandLinksTestSupport(t *testing.T) {
	cmd := exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .Deps " "}}`, "./cmd/...")
	cmd.Dir = Root(t)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	commands := 0
	for line := range strings.Lines(string(out)) {
		fields := strings.Fields(line)
		commands++
		for _, dep := range fields[1:] {
			if testSupport.MatchString(dep) {
				t.Errorf("%s links %s", fields[0], dep)
			}
		}
	}
	if commands < 8 {
		t.Fatalf("go list ./cmd/... named %d commands, want every one (>= 8):\n%s", commands, out)
	}
	for _, pkg := range []string{"adapters/internal/adaptertest", "internal/clusterfixture", "internal/ipamdproc", "conformance/conformancetest"} {
		if !testSupport.MatchString("github.com/sandboxipam/sandboxipam/" + pkg) {
			t.Fatalf("the pattern misses %s", pkg)
		}
	}
}
