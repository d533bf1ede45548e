package testsupport

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// ErrNoGoTool: the go command is not installed, so nothing can be built.
var ErrNoGoTool = errors.New("go command not found")

// BuildFlags are the compile flags of the Makefile's build target
// (GOFLAGS_BUILD, without its -ldflags, which change only the link step).
// They must stay equal, or every test build compiles the module again
// beside make build's cache; TestBuildFlagsMatchMakefile checks it.
func BuildFlags() []string { return nil }

// Build compiles the main packages pkgs (module-relative, as "./cmd/ipamd",
// or patterns as "./cmd/adapters/...") into dir, with the Makefile's
// flags, from the module root. static builds with CGO_ENABLED=0, as the
// Makefile builds the CNI plugin.
func Build(ctx context.Context, dir string, static bool, pkgs ...string) error {
	goTool, err := exec.LookPath("go")
	if err != nil {
		return fmt.Errorf("%w: %w", ErrNoGoTool, err)
	}
	root, err := ModuleRoot()
	if err != nil {
		return err
	}
	args := append([]string{"build"}, BuildFlags()...)
	args = append(args, "-o", dir+string(filepath.Separator))
	args = append(args, pkgs...)
	cmd := exec.CommandContext(ctx, goTool, args...)
	cmd.Dir = root
	if static {
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go %s: %w\n%s", strings.Join(args, " "), err, out)
	}
	return nil
}

// LinkDir returns a directory for binaries built by tests, kept across test
// runs under os.TempDir() and named after the module root and name.
//
// go build -o into a directory leaves a binary alone when it is already up
// to date (it compares the build ID), so a warm run links nothing: linking
// is most of what building a main costs once the build cache is warm, and
// the suite links some 40 binaries. When go build does link, it renames the
// new file into place, so a test process running the previous file at the
// same path, or building it at the same time, never sees a half-written
// one. The directory is a cache, as the build cache is: nothing removes it.
func LinkDir(name string) (string, error) {
	root, err := ModuleRoot()
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256([]byte(root))
	dir := filepath.Join(os.TempDir(), "sandboxipam-bin-"+hex.EncodeToString(sum[:6]), name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("test binary directory: %w", err)
	}
	return dir, nil
}

// builds caches the paths this test process built, by package and linkage:
// even an up-to-date go build takes a second.
var builds struct {
	mu    sync.Mutex
	paths map[string]string
}

// Binary builds the main package pkg (module-relative, as "./cmd/ipamd")
// once per test process into LinkDir("dynamic") and returns the binary's
// path. It skips t when no go command is installed, except in CI, where
// it fails. A test that changes or pins the binary copies it first.
func Binary(t testing.TB, pkg string) string {
	t.Helper()
	return binary(t, pkg, false)
}

// StaticBinary is Binary built with CGO_ENABLED=0 into LinkDir("static"),
// as the Makefile builds the CNI plugin.
func StaticBinary(t testing.TB, pkg string) string {
	t.Helper()
	return binary(t, pkg, true)
}

func binary(t testing.TB, pkg string, static bool) string {
	t.Helper()
	builds.mu.Lock()
	defer builds.mu.Unlock()
	key := fmt.Sprintf("%s static=%v", pkg, static)
	if p, ok := builds.paths[key]; ok {
		return p
	}
	p, err := buildOne(t.Context(), pkg, static)
	if errors.Is(err, ErrNoGoTool) {
		SkipOrFail(t, "cannot build %s: %v", pkg, err)
	}
	if err != nil {
		t.Fatal(err)
	}
	if builds.paths == nil {
		builds.paths = map[string]string{}
	}
	builds.paths[key] = p
	return p
}

func buildOne(ctx context.Context, pkg string, static bool) (string, error) {
	kind := "dynamic"
	if static {
		kind = "static"
	}
	dir, err := LinkDir(kind)
	if err != nil {
		return "", fmt.Errorf("build %s: %w", pkg, err)
	}
	if err := Build(ctx, dir, static, pkg); err != nil {
		return "", err
	}
	return filepath.Join(dir, path.Base(pkg)), nil
}
