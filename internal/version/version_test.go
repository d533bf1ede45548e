package version_test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sandboxipam/sandboxipam/internal/testsupport"
	"github.com/sandboxipam/sandboxipam/internal/version"
	"github.com/sandboxipam/sandboxipam/runtime/plugin"
)

const overrideVar = "github.com/sandboxipam/sandboxipam/internal/version.override"

func TestRequested(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want bool
	}{
		{nil, false},
		{[]string{"--version"}, true},
		{[]string{"-version"}, true},
		{[]string{"--version", "x"}, true},
		{[]string{"run", "--version"}, false},
		{[]string{"--versions"}, false},
	} {
		if got := version.Requested(tc.args); got != tc.want {
			t.Errorf("Requested(%q) = %t, want %t", tc.args, got, tc.want)
		}
	}
}

// TestMakefileLinksTheVersion: make build's flags set the variable that
// String reports.
func TestMakefileLinksTheVersion(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(testsupport.Root(t), "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.SplitSeq(string(data), "\n") {
		if name, value, ok := strings.Cut(line, ":="); ok && strings.TrimSpace(name) == "GOFLAGS_BUILD" {
			if !strings.Contains(value, "-X "+overrideVar+"=$(VERSION)") {
				t.Errorf("GOFLAGS_BUILD = %s, want it to link -X %s=$(VERSION)", value, overrideVar)
			}
			return
		}
	}
	t.Fatal("the Makefile defines no GOFLAGS_BUILD")
}

// TestEveryBinaryReportsItsVersion links every command with a version, as
// make build does, and runs each with --version; each adapter run by hand
// must also say it is a plugin and exit 2.
func TestEveryBinaryReportsItsVersion(t *testing.T) {
	if testing.Short() {
		t.Skip("links every command")
	}
	const want = "v0.0.0-versiontest"
	// A directory kept across runs: go build relinks only what changed.
	dir, err := testsupport.LinkDir("version-test")
	if err != nil {
		t.Fatal(err)
	}
	build := exec.Command("go", "build", "-ldflags", "-X "+overrideVar+"="+want, "-o", dir+"/", "./cmd/...")
	build.Dir = testsupport.Root(t)
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/...: %v\n%s", err, out)
	}
	build = exec.Command("go", "build", "-ldflags", "-X "+overrideVar+"="+want, "-o", filepath.Join(dir, "adapters")+"/", "./cmd/adapters/...")
	build.Dir = testsupport.Root(t)
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/adapters/...: %v\n%s", err, out)
	}
	commands, _ := filepath.Glob(filepath.Join(dir, "*"))
	adapters, _ := filepath.Glob(filepath.Join(dir, "adapters", "*"))
	if len(commands) < 8 || len(adapters) != 4 {
		t.Fatalf("built %d commands and %d adapters, want every one: %q %q", len(commands), len(adapters), commands, adapters)
	}
	for _, path := range append(commands, adapters...) {
		if fi, err := os.Stat(path); err != nil || fi.IsDir() {
			continue
		}
		out, err := exec.Command(path, "--version").CombinedOutput()
		if err != nil || !strings.HasSuffix(strings.TrimSpace(string(out)), " "+want) || strings.Count(string(out), "\n") != 1 {
			t.Errorf("%s --version = %q, %v; want one line ending in %q", path, out, err, want)
		}
	}
	for _, path := range adapters {
		cmd := exec.Command(path)
		cmd.Env = []string{} // no go-plugin magic cookie: run by hand
		out, err := cmd.CombinedOutput()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 2 {
			t.Errorf("%s run by hand: %v, want exit status 2", path, err)
		}
		if want := plugin.ByHandMessage(filepath.Base(path)) + "\n"; string(out) != want {
			t.Errorf("%s run by hand printed %q, want %q", path, out, want)
		}
	}
}

// TestGitBuildSaysReleaseAndCommit: a binary built from this checkout
// without the Makefile's override (go build, go test's own builds) says
// version.Release and the checkout's commit, so an operator can tell two
// builds of one release apart.
func TestGitBuildSaysReleaseAndCommit(t *testing.T) {
	if testing.Short() {
		t.Skip("links a command")
	}
	root := testsupport.Root(t)
	head, err := exec.Command("git", "-C", root, "rev-parse", "HEAD").Output()
	if err != nil {
		testsupport.SkipOrFail(t, "no git checkout to stamp a commit from: %v", err)
	}
	dir, err := testsupport.LinkDir("version-vcs-test")
	if err != nil {
		t.Fatal(err)
	}
	build := exec.Command("go", "build", "-buildvcs=true", "-o", dir+"/", "./cmd/ipamctl")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build -buildvcs=true ./cmd/ipamctl: %v\n%s", err, out)
	}
	out, err := exec.Command(filepath.Join(dir, "ipamctl"), "--version").Output()
	if err != nil {
		t.Fatal(err)
	}
	fields := strings.Fields(string(out))
	rel, meta := version.Split(fields[len(fields)-1])
	commit, _, _ := strings.Cut(meta, ".")
	if rel != version.Release || commit != strings.TrimSpace(string(head))[:12] || (meta != commit && meta != commit+".dirty") {
		t.Errorf("ipamctl --version = %q, want %s+%s (with .dirty for a modified tree)", out, version.Release, strings.TrimSpace(string(head))[:12])
	}
}
