package plugin

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/sandboxipam/sandboxipam/internal/testsupport"
)

const (
	module     = "github.com/sandboxipam/sandboxipam/"
	authorSide = module + "runtime/plugin"
	hostSide   = module + "runtime/plugin/host"
)

// An adapter binary links the author's side of the transport and none of
// the host's (launch, supervisor, process and socket handling): the split
// between runtime/plugin and runtime/plugin/host holds. ipamd, a host,
// must link the host's side, so that the check cannot pass because the
// host package went missing or was renamed. The shipped adapters are
// every main under cmd/adapters (internal/image's tests hold those equal
// to ipamd's adapter table), so a new one is checked without a list here.
func TestAdaptersDoNotLinkTheHostSide(t *testing.T) {
	adapters := append(shippedAdapters(t), "examples/adapter-docker-minimal")
	hosts := []string{"cmd/ipamd", "cmd/conformance"}
	deps := listDeps(t, append(append([]string(nil), adapters...), hosts...))
	for _, pkg := range adapters {
		if !deps[module+pkg][authorSide] {
			t.Errorf("adapter %s does not link %s: is it still an adapter?", pkg, authorSide)
		}
		if deps[module+pkg][hostSide] {
			t.Errorf("adapter %s links the host's side, %s", pkg, hostSide)
		}
	}
	for _, pkg := range hosts {
		if !deps[module+pkg][hostSide] {
			t.Errorf("host %s does not link %s: the check above proves nothing", pkg, hostSide)
		}
	}
}

// shippedAdapters are the packages under cmd/adapters, module-relative.
func shippedAdapters(t *testing.T) []string {
	t.Helper()
	cmd := exec.Command("go", "list", "./cmd/adapters/...")
	cmd.Dir = testsupport.Root(t)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	var pkgs []string
	for line := range strings.Lines(string(out)) {
		pkgs = append(pkgs, strings.TrimPrefix(strings.TrimSpace(line), module))
	}
	if len(pkgs) < 4 {
		t.Fatalf("go list ./cmd/adapters/... named %d packages, want the four shipped adapters at least:\n%s", len(pkgs), out)
	}
	return pkgs
}

// listDeps is go list's dependency set of each package (a path inside
// this module).
func listDeps(t *testing.T, pkgs []string) map[string]map[string]bool {
	t.Helper()
	args := []string{"list", "-f", `{{.ImportPath}} {{join .Deps " "}}`}
	for _, pkg := range pkgs {
		args = append(args, "./"+pkg)
	}
	cmd := exec.Command("go", args...)
	cmd.Dir = testsupport.Root(t)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	deps := map[string]map[string]bool{}
	for line := range strings.Lines(string(out)) {
		fields := strings.Fields(line)
		set := map[string]bool{}
		for _, dep := range fields[1:] {
			set[dep] = true
		}
		deps[fields[0]] = set
	}
	if len(deps) != len(pkgs) {
		t.Fatalf("go list named %d packages, want %d:\n%s", len(deps), len(pkgs), out)
	}
	return deps
}
